"""Reading a managed ledger across tiers under the four read priorities
(Pulsar's, with the ``*_FIRST`` fallbacks), the offloaded read handles
shared by concurrent readers, and read-ahead from one offloaded ledger
into the next.

May import :mod:`..hot`, :mod:`..lifecycle` (policies, records) and
:mod:`..ledger_core`; never :mod:`..streaming`."""
