"""Starting the broker's worker processes.

A worker is a fresh interpreter running our own entry point
(``python -m offload_core.managed_ledger.worker_main``), linked to the
broker by a :class:`multiprocessing.connection.Connection` over a socket
pair whose end it inherits. It never imports the caller's ``__main__``
(as multiprocessing's spawn does), so a script without an
``if __name__ == "__main__":`` guard, a REPL, a notebook and a frozen
application all embed a broker alike, and the script runs once.

Where no worker can start (a frozen application, whose executable is not a
Python; an interpreter that fails to start or to import us), the broker
does the work on its own threads: :class:`WorkerLauncher` says so in one
logged line and starts nothing more.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Literal

from ...errors import OffloadError

__all__ = ["WORKER_ENTRY_POINT", "Role", "WorkerLauncher", "WorkerProcess", "WorkersUnavailable", "picklable"]

log = logging.getLogger(__name__)

WORKER_ENTRY_POINT = "offload_core.managed_ledger.worker_main"
"""The module a worker process runs (``python -m``)."""

Role = Literal["offloads", "segments"]
"""What a worker serves: whole-ledger offloads, or streamed segments."""

# A worker says it is ready once its interpreter has imported us: seconds on
# a loaded machine, never a minute unless it cannot start.
_READY_TIMEOUT = 60.0
# How long a worker told to stop may take to finish what it was doing.
_STOP_TIMEOUT = 30.0


class WorkersUnavailable(OffloadError):
    """No worker process can start; the broker works on its own threads."""


class WorkerProcess:
    """A running worker process and the connection to it (used by one
    thread at a time for sending, and one for receiving)."""

    def __init__(self, process: subprocess.Popen[bytes], conn: Connection, pid: int) -> None:
        self._process = process
        self.conn = conn
        self.pid = pid  # the worker's own (the executable may be a launcher that starts it)

    def stop(self) -> None:
        """Tell the worker to stop and wait for it to end (quiet if it is
        gone already); the connection stays open until :meth:`close`."""
        with contextlib.suppress(OSError):  # gone already: ended below
            self.conn.send(("stop",))
        self.ended()

    def ended(self) -> str:
        """Wait for the worker to end (killed if it takes more than
        :data:`_STOP_TIMEOUT` seconds); how it ended, for messages."""
        try:
            code = self._process.wait(_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            code = self._process.wait()
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def close(self) -> None:
        """Close the connection (once nobody receives on it)."""
        self.conn.close()

    def kill(self) -> None:
        """End the worker at once, whatever it was doing (left to be cleaned
        up as after a crash), and close the connection."""
        self._process.kill()
        self._process.wait()
        self.conn.close()


class WorkerLauncher:
    """Starts the worker processes of one broker. The first start that fails
    is logged, in one line, and makes :attr:`available` false: from then on
    :meth:`start` raises :class:`WorkersUnavailable` at once and the
    broker's offloads and segments run on its own threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failure: str | None = None

    @property
    def available(self) -> bool:
        """False once a worker could not start."""
        return self._failure is None

    def start(self, role: Role) -> WorkerProcess:
        """Start a worker serving ``role`` and wait until it is ready. Raises :class:`WorkersUnavailable` if it
        cannot start (or one could not before)."""
        if self._failure is not None:
            raise WorkersUnavailable(f"worker processes cannot start ({self._failure})")
        try:
            return _start(role)
        except (OSError, EOFError, _NotReady) as exc:
            reason = str(exc) if isinstance(exc, _NotReady) else f"{type(exc).__name__}: {exc}"
            with self._lock:
                first = self._failure is None
                if first:
                    self._failure = reason
            if first:
                log.warning("offload-core worker processes cannot start (%s); offloads and streaming run on "
                            "the broker's threads instead", reason)  # fmt: skip
            raise WorkersUnavailable(f"worker processes cannot start ({reason})") from None


class _NotReady(Exception):
    """The started process never said it was ready."""


def _start(role: Role) -> WorkerProcess:
    if os.name != "posix":
        raise _NotReady(f"a worker inherits its link's descriptor, which needs a POSIX system, not {os.name}")
    if getattr(sys, "frozen", False):
        raise _NotReady("a frozen application: its executable runs the application, not Python")
    if not sys.executable:
        raise _NotReady("the interpreter's executable is unknown (sys.executable is empty)")
    ours, theirs = multiprocessing.Pipe()  # a socket pair on POSIX
    try:
        # The worker imports what this process can: the same path, not the
        # caller's __main__ (the child's working directory is ours too).
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(entry for entry in sys.path if entry)}
        process = subprocess.Popen([sys.executable, "-m", WORKER_ENTRY_POINT, role, str(theirs.fileno())],
                                   stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), env=env)  # fmt: skip
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()  # the worker holds its end: the link ends when either process does
    try:
        if not ours.poll(_READY_TIMEOUT):
            raise _NotReady(f"{sys.executable} did not start a worker in {_READY_TIMEOUT:.0f} s")
        ready = ours.recv()
        if not (isinstance(ready, tuple) and len(ready) == 2 and ready[0] == "ready" and isinstance(ready[1], int)):
            raise _NotReady(f"{sys.executable} answered {ready!r} instead of starting a worker")
    except BaseException as exc:
        process.kill()
        code = process.wait()
        ours.close()
        if isinstance(exc, EOFError):
            raise _NotReady(f"{sys.executable} -m {WORKER_ENTRY_POINT} ended with exit status {code}") from None
        raise
    return WorkerProcess(process, ours, ready[1])


def picklable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else an :class:`OffloadError` saying what it was."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return OffloadError(f"{type(exc).__name__}: {exc}")
    return exc
