"""Offloading sealed ledgers in worker processes.

Encoding a ledger's blocks is Python work that holds the interpreter lock:
on a broker thread it makes every producer of the process wait its turn
(see bench/README.md). A worker process
(:mod:`~offload_core.managed_ledger.lifecycle.offload_worker_process`, started as
:mod:`.worker_processes` says) writes the objects of a prepared offload
ticket instead (:func:`~offload_core.managed_ledger.lifecycle.offload_ticket.write_offload`,
as a Spark task does) while the broker thread only waits for it. The
worker loads plugins from their entry points; the events it emits are
carried back and emitted in the broker, so metrics and progress see them.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping

from ...errors import OffloadError
from ...hooks import Event
from ...offload.ledger import OffloadResult
from ..workers.worker_processes import WorkerLauncher, WorkerProcess
from .offload_ticket import OffloadTicket

__all__ = ["WORKER_NICENESS", "OffloadWorkers", "reachable_from_workers", "yield_to_producers"]

# Stores that live in the broker's own memory cannot be written from elsewhere.
_IN_PROCESS_DRIVERS = {"memory"}


def reachable_from_workers(settings: Mapping[str, str]) -> bool:
    """Whether a worker process can reach the store ``settings`` name."""
    return settings.get("driver", "local-directory").lower() not in _IN_PROCESS_DRIVERS


# How much lower than the broker a worker runs: offloads are background
# work, and on a machine with as many busy processes as cores the
# scheduler should hand a producer the CPU first.
WORKER_NICENESS = 10


def yield_to_producers() -> None:
    """Run this (worker) process at a lower CPU priority than the broker."""
    with contextlib.suppress(OSError, AttributeError):  # not on every platform; a nicety, not a need
        os.nice(WORKER_NICENESS)


class OffloadWorkers:
    """Up to ``processes`` worker processes, started on first use (by
    ``launcher``), owned by one broker; each writes one ticket at a time.
    :meth:`offload` raises what the write raised (the ticket's objects are
    then gone), :class:`OffloadError` if the worker died (a fresh one
    serves the next offload), or :class:`WorkersUnavailable`, with nothing
    written, if no worker process can start."""

    def __init__(self, processes: int, emit: Callable[[Event], None], launcher: WorkerLauncher) -> None:
        self._processes = processes
        self._emit = emit
        self._launcher = launcher
        self._turns = threading.BoundedSemaphore(processes)
        self._lock = threading.Lock()
        self._idle: list[WorkerProcess] = []
        self._busy: set[WorkerProcess] = set()
        self._closed = False

    def can_write(self, ticket: OffloadTicket) -> bool:
        """Whether a worker can write the ticket: it can reach the ticket's
        store, and worker processes can start (as far as is known)."""
        return self._launcher.available and reachable_from_workers(dict(ticket.settings))

    @property
    def process_ids(self) -> list[int]:
        """The running workers' process ids (for tests and diagnostics)."""
        with self._lock:
            return [worker.pid for worker in [*self._idle, *self._busy]]

    def start(self) -> None:
        """Start the worker processes now rather than for the first
        offloads, and wait until they serve. Raises
        :class:`WorkersUnavailable` if they cannot start."""
        with self._lock:
            missing = self._processes - len(self._idle) - len(self._busy)
        for _ in range(missing):
            worker = self._launcher.start("offloads")
            with self._lock:
                self._idle.append(worker)

    def offload(self, ticket: OffloadTicket) -> OffloadResult:
        with self._turns:
            worker = self._take()
            try:
                worker.conn.send(("offload", ticket))
                answer = worker.conn.recv()
            except (EOFError, OSError):
                self._drop(worker)
                status = worker.ended()
                worker.close()
                raise OffloadError(
                    f"the offload worker process for ledger {ticket.ledger_id} died ({status}); the offload is retried"
                ) from None
            except BaseException:  # interrupted, say: its answer may still come, and must not be another's
                self._drop(worker)
                worker.kill()
                raise
            self._give_back(worker)
        if answer[0] == "failed":
            raise answer[1]
        _, result, events = answer
        for event in events:
            self._emit(event)
        assert isinstance(result, OffloadResult)
        return result

    def _take(self) -> WorkerProcess:
        """An idle worker, or a new one (a turn guarantees one is free)."""
        with self._lock:
            worker = self._idle.pop() if self._idle else None
            if worker is not None:
                self._busy.add(worker)
                return worker
        worker = self._launcher.start("offloads")
        with self._lock:
            self._busy.add(worker)
        return worker

    def _drop(self, worker: WorkerProcess) -> None:
        with self._lock:
            self._busy.discard(worker)

    def _give_back(self, worker: WorkerProcess) -> None:
        with self._lock:
            self._busy.discard(worker)
            closed = self._closed
            if not closed:
                self._idle.append(worker)
        if closed:
            worker.stop()
            worker.close()

    def close(self) -> None:
        """Stop the idle workers; one still writing stops when it is done."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.stop()
            worker.close()
