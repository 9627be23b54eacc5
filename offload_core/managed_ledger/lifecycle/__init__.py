"""The ledger lifecycle: a ledger sealed, offloaded whole (PIP-17: prepare,
write, complete, then the hot copy deleted past the lag), cleaned up when
an offload was left unfinished, trimmed by retention behind its cursors;
the policies that decide all of it (broker, namespace, topic), the
offloaders they name, the metadata records it changes and the worker
processes that write offloads.

May import :mod:`..hot`, :mod:`..workers`, and the shared state every part
builds on (:mod:`..ledger_core`, :mod:`..metadata_store`); never
:mod:`..streaming` or :mod:`..reads`."""
