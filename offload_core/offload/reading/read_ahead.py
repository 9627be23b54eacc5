"""Read-ahead for catch-up readers: ranged GETs in flight on a small thread
pool, within a byte budget for the process and one per reader, with
concurrent readers of one range sharing its download.

At 100 ms to first byte a reader that waits for each GET tops out near
10 MB/s whatever its buffer; several ranges in flight hide the latency.
Memory stays bounded because every range is charged against the pool's
budget from the moment it is requested until the last reader holding it
lets go, and a reader only asks ahead while both its own allowance and
the pool's budget have room (admission control: a hundred readers share
the budget, they do not each get one). A range a reader must have to make
progress is admitted even when the budget is spent, so one reader never
waits on another; that is at most one range over the budget per reader
with nothing else in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from ...errors import ConfigError
from ...hooks import Event
from ...storage import StorageDriver

__all__ = [
    "DEFAULT_RANGE_SIZE",
    "DEFAULT_READER_BYTES",
    "DEFAULT_TOTAL_BYTES",
    "ReadAheadPool",
    "SharedRange",
]

DEFAULT_RANGE_SIZE = 16 * 2**20
"""One GET's size: 64 requests per GiB replayed (at most 128 is the goal; the ends of a replay add a few)."""
DEFAULT_READER_BYTES = 4 * DEFAULT_RANGE_SIZE
DEFAULT_TOTAL_BYTES = 256 * 2**20
DEFAULT_WORKERS = 8


@dataclass(eq=False)
class SharedRange:
    """Bytes ``[start, end)`` of one object, being fetched or fetched, held
    by ``holders`` readers. Read ``future.result()`` for the bytes (it
    raises what the driver raised)."""

    key: str
    start: int
    end: int
    future: Future[bytes]
    holders: int = 1
    charged: bool = field(default=True, repr=False)

    @property
    def size(self) -> int:
        return self.end - self.start


class ReadAheadPool:
    """Threads, a byte budget and a single-flight table shared by every
    reader it serves (give one pool to all offloaders of a process to
    bound the process).

    ``total_bytes`` bounds the bytes of every range requested and not yet
    released; ``reader_bytes`` bounds what one reader asks for ahead of
    itself; ``range_size`` is the size of one GET. With ``emit``, every
    range asked for is a ``read_ahead.range`` event (``outcome``:
    ``fetched``, ``shared`` (joined another reader's download), ``refused``
    (no budget) or ``direct``; ``charged_bytes``). Raises
    :class:`ConfigError` for sizes that are not positive integers or a
    reader allowance below one range.
    """

    def __init__(
        self,
        *,
        total_bytes: int = DEFAULT_TOTAL_BYTES,
        reader_bytes: int = DEFAULT_READER_BYTES,
        range_size: int = DEFAULT_RANGE_SIZE,
        workers: int = DEFAULT_WORKERS,
        emit: Callable[[Event], None] | None = None,
    ) -> None:
        for name, value in (
            ("read-ahead total bytes", total_bytes),
            ("read-ahead bytes per reader", reader_bytes),
            ("read-ahead range size", range_size),
            ("read-ahead workers", workers),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if reader_bytes < range_size:
            raise ConfigError(f"read-ahead bytes per reader ({reader_bytes}) must be at least one range ({range_size})")
        self.total_bytes = total_bytes
        self.reader_bytes = reader_bytes
        self.range_size = range_size
        self._workers = workers
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._ranges: dict[tuple[int, str, int, int], SharedRange] = {}
        self._charged = 0
        self.peak_bytes = 0
        """The most bytes ever charged at once (for benchmarks and tests)."""
        self.fetches = 0
        """Ranges fetched; a range shared by several readers counts once."""
        self._closed = False
        self._emit = emit

    @property
    def charged_bytes(self) -> int:
        """Bytes of the ranges requested and not yet released."""
        with self._lock:
            return self._charged

    @property
    def ranges(self) -> int:
        """Distinct ranges held (being fetched, or fetched and not yet let go)."""
        with self._lock:
            return len(self._ranges)

    @property
    def holds(self) -> int:
        """Ranges held, counted once per reader holding each (a range two
        readers share counts twice); for metrics and tests."""
        with self._lock:
            return sum(shared.holders for shared in self._ranges.values())

    def acquire(self, driver: StorageDriver, key: str, start: int, end: int, *, needed: bool) -> SharedRange | None:
        """Hold bytes ``[start, end)`` of ``key``: join the download another
        reader started, or start one. Returns ``None`` when the range is
        not ``needed`` (only read ahead) and the budget has no room for it.
        Every range returned must be given back with :meth:`release`."""
        slot = (id(driver), key, start, end)
        size = end - start
        with self._lock:
            shared = self._ranges.get(slot)
            if shared is not None and not (shared.future.done() and shared.future.exception() is not None):
                shared.holders += 1
                outcome, result = "shared", shared
            elif not needed and (self._closed or self._charged + size > self.total_bytes):
                outcome, result = "refused", None
            elif not self._closed:
                # Looked up, charged and registered under one lock: two
                # readers asking at once cannot both start the download.
                self._charged += size
                self.peak_bytes = max(self.peak_bytes, self._charged)
                self.fetches += 1
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="offload-read-ahead")
                shared = SharedRange(key, start, end, self._executor.submit(driver.read, key, start, end))
                self._ranges[slot] = shared
                outcome, result = "fetched", shared
            else:
                outcome, result = "direct", None
            charged = self._charged
        if self._emit is not None:
            self._emit(Event("read_ahead.range", {"outcome": outcome, "bytes": size, "charged_bytes": charged,
                                                  "needed": needed}))  # fmt: skip
        if outcome == "direct":
            return self._fetch_now(driver, key, start, end)
        return result

    def release(self, driver: StorageDriver, shared: SharedRange) -> None:
        """Let go of ``shared``; the last holder frees its budget (once the
        download stops: a running GET cannot be interrupted, one not yet
        started is cancelled)."""
        with self._lock:
            shared.holders -= 1
            if shared.holders > 0:
                return
            slot = (id(driver), shared.key, shared.start, shared.end)
            if self._ranges.get(slot) is shared:
                del self._ranges[slot]
            if not shared.charged:
                return
            if shared.future.done() or shared.future.cancel():
                self._uncharge(shared)
                return
        shared.future.add_done_callback(lambda _: self._uncharge_locked(shared))

    def close(self) -> None:
        """Stop the worker threads; downloads not started are cancelled.
        Readers still open fall back to fetching on their own thread."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _fetch_now(self, driver: StorageDriver, key: str, start: int, end: int) -> SharedRange:
        future: Future[bytes] = Future()
        future.set_running_or_notify_cancel()
        try:
            future.set_result(driver.read(key, start, end))
        except BaseException as exc:  # handed to the reader through the future, as a worker's would be
            future.set_exception(exc)
        return SharedRange(key, start, end, future, charged=False)

    def _uncharge_locked(self, shared: SharedRange) -> None:
        with self._lock:
            self._uncharge(shared)

    def _uncharge(self, shared: SharedRange) -> None:
        if shared.charged:
            shared.charged = False
            self._charged -= shared.size
