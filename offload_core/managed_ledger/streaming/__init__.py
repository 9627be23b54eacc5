"""Streaming offload (PIP-76) of a managed ledger: what triggers the pump,
the pump and its planning, the producer's pipelined offers, segments
recorded in the metadata, their housekeeping and backfill tickets, and the
segment worker process with its link.

May import :mod:`..hot`, :mod:`..lifecycle`, :mod:`..workers` and
:mod:`..ledger_core`; nothing of the managed ledger imports it but the
composed :class:`~offload_core.managed_ledger.ManagedLedger`."""
