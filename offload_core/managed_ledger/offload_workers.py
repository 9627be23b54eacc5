"""Offloading sealed ledgers in worker processes.

Encoding a ledger's blocks is Python work that holds the interpreter lock:
on a broker thread it makes every producer of the process wait its turn
(see bench/README.md). A worker process writes the objects of a prepared
offload ticket instead (:func:`~offload_core.managed_ledger.offload_ticket.write_offload`,
as a Spark task does) while the broker thread only waits for it. The
worker loads plugins from their entry points; the events it emits are
carried back and emitted in the broker, so metrics and progress see them.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..errors import OffloadError
from ..hooks import Event, hookimpl
from ..offload.ledger import OffloadResult
from ..plugins import PluginManager
from .offload_ticket import OffloadTicket, write_offload
from .worker_memory import keep_freed_memory

__all__ = ["WORKER_NICENESS", "OffloadWorkers", "reachable_from_workers", "yield_to_producers"]

# Stores that live in the broker's own memory cannot be written from elsewhere.
_IN_PROCESS_DRIVERS = {"memory"}


def reachable_from_workers(settings: Mapping[str, str]) -> bool:
    """Whether a worker process can reach the store ``settings`` name."""
    return settings.get("driver", "filesystem").lower() not in _IN_PROCESS_DRIVERS


# How much lower than the broker a worker runs: offloads are background
# work, and on a machine with as many busy processes as cores the
# scheduler should hand a producer the CPU first.
WORKER_NICENESS = 10


def yield_to_producers() -> None:
    """Run this (worker) process at a lower CPU priority than the broker."""
    with contextlib.suppress(OSError, AttributeError):  # not on every platform; a nicety, not a need
        os.nice(WORKER_NICENESS)


def _exit_with_the_broker() -> None:
    """In a worker process: exit at once when the broker that started it
    is gone (killed, say), rather than wait forever for work nobody will
    send or collect. What it was writing is the next open's to clean up,
    as after any crash of the broker."""
    broker = multiprocessing.parent_process()
    if broker is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([broker.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="offload-core-broker-watch", daemon=True).start()


def _start_worker() -> None:
    yield_to_producers()
    keep_freed_memory()
    _exit_with_the_broker()


class _Collector:
    def __init__(self) -> None:
        self.events: list[Event] = []

    @hookimpl
    def offload_core_on_event(self, event: Event) -> None:
        self.events.append(event)


def _write_in_worker(ticket: OffloadTicket) -> tuple[OffloadResult, list[Event]]:
    """Runs in a worker: the ticket's objects, and the events it emitted."""
    collector = _Collector()
    plugins = PluginManager()
    plugins.register(collector)
    return write_offload(ticket, plugins), collector.events


class OffloadWorkers:
    """A small pool of worker processes, started on first use, owned by
    one broker. :meth:`offload` raises what the write raised (the ticket's
    objects are then gone), or :class:`OffloadError` if the worker died."""

    def __init__(self, processes: int, emit: Callable[[Event], None]) -> None:
        self._processes = processes
        self._emit = emit
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    @staticmethod
    def can_write(ticket: OffloadTicket) -> bool:
        """Whether a worker can reach the ticket's store."""
        return reachable_from_workers(dict(ticket.settings))

    def start(self) -> None:
        """Start the worker processes now rather than for the first
        offload, and wait until they serve."""
        pool = self._started()
        for started in [pool.submit(os.getpid) for _ in range(self._processes)]:
            started.result()

    def _started(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # Spawned, not forked: the broker has threads and open files.
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(max_workers=self._processes, mp_context=context,
                                                 initializer=_start_worker)  # fmt: skip
            return self._pool

    def offload(self, ticket: OffloadTicket) -> OffloadResult:
        pool = self._started()
        try:
            result, events = pool.submit(_write_in_worker, ticket).result()
        except BrokenProcessPool as exc:
            with self._lock:
                if self._pool is pool:
                    self._pool = None  # the next offload starts fresh workers
            raise OffloadError(
                f"the offload worker process for ledger {ticket.ledger_id} died ({exc}); the offload is retried"
            ) from None
        for event in events:
            self._emit(event)
        return result

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
