"""Offloads as the store-wide jobs see them, whichever offloader wrote
them: a kind of stored offload (:class:`.kinds.StoredKind`: Pulsar's v1
ledgers, its v2 segments, a Hadoop MapFile ledger ...) finds its offloads in
a store by their keys, verifies them in parallelizable steps, ages and
deletes them. Each offloader registers the kinds it writes with
``offload_core_register_offloaders(register)`` (``stored=``), so the
``verify`` and ``retention`` jobs serve a new one with no change.

May import :mod:`..ledgers`, :mod:`..segments` and :mod:`..reading`; none
of them imports this package."""
