"""The broker's background work: threshold offloads (and the hot-copy
deletion that follows them) run here, never on a producer's thread."""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..hooks import Event

__all__ = ["BackgroundWork"]

log = logging.getLogger(__name__)


class BackgroundWork:
    """A small, bounded pool of threads owned by one broker.

    :meth:`submit` and :meth:`submit_after` never block and never raise;
    :meth:`drain` starts every job deferred with :meth:`submit_after` at
    once, then waits until everything submitted so far (and whatever it
    submitted) is done; :meth:`close` drains, then stops the threads. A
    job that raises is logged and reported as a ``maintenance.failed``
    event; it never reaches the caller that submitted it. A job submitted
    once :meth:`close` has drained is dropped: the broker is stopping,
    each topic's close finishes its own streaming, and what else was due
    (an offload, a trim, a deletion) is found due again by the periodic
    maintenance (``ManagedLedger.run_maintenance``) after the next open."""

    def __init__(self, emit: Callable[[Event], None], *, threads: int = 2) -> None:
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="offload-core-background")
        self._emit = emit
        self._pending = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closed = False
        self._deferred: list[tuple[float, int, str, Callable[[], object]]] = []  # a heap, by due time
        self._deferred_count = 0
        self._timer: threading.Thread | None = None

    def submit(self, what: str, job: Callable[[], object]) -> None:
        """Run ``job`` in the background (``what`` names it in logs)."""
        with self._lock:
            self._submit_locked(what, job)

    def submit_after(self, delay: float, what: str, job: Callable[[], object]) -> None:
        """Submit ``job`` once ``delay`` seconds have passed, or at the next
        :meth:`drain`, whichever comes first."""
        with self._lock:
            if self._closed:
                log.debug("background %s not deferred: the broker is closing", what)
                return
            self._deferred_count += 1
            heapq.heappush(self._deferred, (time.monotonic() + delay, self._deferred_count, what, job))
            if self._timer is None:
                self._timer = threading.Thread(target=self._submit_when_due, name="offload-core-deferred",
                                               daemon=True)  # fmt: skip
                self._timer.start()
            self._changed.notify_all()

    def drain(self, timeout: float | None = None) -> bool:
        """Start every deferred job now and wait until no job is pending;
        false if ``timeout`` ran out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while True:
                while self._deferred:
                    _, _, what, job = heapq.heappop(self._deferred)
                    self._submit_locked(what, job)
                left = None if deadline is None else deadline - time.monotonic()
                if not self._changed.wait_for(lambda: not self._pending or bool(self._deferred), left):
                    return False
                if not self._pending and not self._deferred:
                    return True

    def close(self) -> None:
        self.drain()
        with self._lock:
            self._closed = True
            self._changed.notify_all()
        if self._timer is not None:
            self._timer.join()
        self._pool.shutdown(wait=True)

    def _submit_locked(self, what: str, job: Callable[[], object]) -> None:
        if self._closed:
            log.debug("background %s not run: the broker is closing", what)
            return

        def run() -> None:
            try:
                job()
            except Exception as exc:
                log.error("background %s failed: %s", what, exc)
                self._emit(Event("maintenance.failed", {"what": what, "error": f"{type(exc).__name__}: {exc}"}))
            finally:
                with self._lock:
                    self._pending -= 1
                    self._changed.notify_all()

        self._pending += 1
        self._pool.submit(run)

    def _submit_when_due(self) -> None:
        with self._lock:
            while not self._closed:
                if not self._deferred:
                    self._changed.wait()
                    continue
                wait = self._deferred[0][0] - time.monotonic()
                if wait > 0:
                    self._changed.wait(wait)
                    continue
                _, _, what, job = heapq.heappop(self._deferred)
                self._submit_locked(what, job)
