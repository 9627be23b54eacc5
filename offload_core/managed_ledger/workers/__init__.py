"""Worker processes in general: starting one as our own entry point
(``python -m offload_core.managed_ledger.worker_main``, never a re-import
of the caller's ``__main__``), the link it inherits, falling back to the
broker's threads where none can start, and how a worker uses memory.

Knows nothing of what a worker serves: the offload workers live in
:mod:`..lifecycle`, the segment workers in :mod:`..streaming`, and
:mod:`..worker_main` dispatches a started worker to its role."""
