"""The broker's background work: threshold offloads (and the hot-copy
deletion that follows them) run here, never on a producer's thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from ..hooks import Event

__all__ = ["BackgroundWork"]

log = logging.getLogger(__name__)


class BackgroundWork:
    """A small, bounded pool of threads owned by one broker.

    :meth:`submit` never blocks and never raises; :meth:`drain` waits
    until everything submitted so far (and whatever it submitted) is done;
    :meth:`close` drains, then stops the threads. A job that raises is
    logged and reported as a ``maintenance.failed`` event; it never reaches
    the caller that submitted it. A job submitted once :meth:`close` has
    drained is dropped: the broker is stopping, each topic's close finishes
    its own streaming, and what else was due (an offload, a trim, a
    deletion) is found due again by the periodic maintenance
    (``ManagedLedger.run_maintenance``) after the next open."""

    def __init__(self, emit: Callable[[Event], None], *, threads: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="offload-core-background")
        self._emit = emit
        self._pending: set[Future[None]] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._closed = False

    def submit(self, what: str, job: Callable[[], object]) -> None:
        """Run ``job`` in the background (``what`` names it in logs)."""

        def run() -> None:
            try:
                job()
            except Exception as exc:
                log.error("background %s failed: %s", what, exc)
                self._emit(Event("maintenance.failed", {"what": what, "error": f"{type(exc).__name__}: {exc}"}))

        with self._lock:
            if self._closed:
                log.debug("background %s not run: the broker is closing", what)
                return
            future = self._pool.submit(run)
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)
            if not self._pending:
                self._idle.notify_all()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until no job is pending; false if ``timeout`` ran out first."""
        with self._lock:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    def close(self) -> None:
        self.drain()
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=True)
