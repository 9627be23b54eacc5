"""Reading offloaded objects back, shared by both families: the read
handle protocol, the handle that walks a v1 ledger object or one ledger's
run in a v2 segment, block tables and checkpoints, the bytes of one data
object, and read-ahead for catch-up readers.

Imports nothing of :mod:`..ledgers` or :mod:`..segments`: both build on
it."""
