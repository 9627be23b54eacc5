"""The entry point of a worker process (see :mod:`.worker_processes`):
``python -m offload_core.managed_ledger.worker_main ROLE FD``, run by the
broker, where ``FD`` is the worker's inherited end of the link to it. The
worker says it is ready, then serves ``ROLE`` until told to stop or the
link ends (its broker is gone)."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection

from .lifecycle.offload_worker_process import serve_offloads
from .lifecycle.offload_workers import yield_to_producers
from .streaming.segment_worker_process import serve_segments
from .workers.worker_memory import keep_freed_memory
from .workers.worker_processes import Role

__all__ = ["main"]

_ROLES: dict[Role, Callable[[Connection], None]] = {"offloads": serve_offloads, "segments": serve_segments}


def main(argv: Sequence[str]) -> None:
    """Serve the role ``argv`` names over the link ``argv`` names; exits
    with a one-line message if they are not a role and a descriptor."""
    if len(argv) != 2 or argv[0] not in _ROLES or not argv[1].isdigit():
        raise SystemExit(f"usage: python -m {__spec__.name} {{{','.join(_ROLES)}}} FD (the broker starts this)")
    # Ctrl-C in a terminal reaches the whole process group: the broker
    # decides when its workers stop, and if it dies they see the link end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    yield_to_producers()
    keep_freed_memory()
    conn = Connection(int(argv[1]))
    try:
        conn.send(("ready", os.getpid()))
    except OSError:
        return  # the broker is gone already
    _ROLES[argv[0]](conn)


if __name__ == "__main__":
    main(sys.argv[1:])
