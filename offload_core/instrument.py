"""Counting every storage request, and reporting it as an event."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from .hooks import Event
from .model import ObjectInfo
from .storage import BytesLike, StorageDriver
from .wrapping_driver import WrappingDriver

__all__ = ["InstrumentedDriver", "RequestCounts"]

T = TypeVar("T")


@dataclass
class RequestCounts:
    """Requests made through an :class:`InstrumentedDriver`, by operation."""

    requests: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0
    bytes_written: int = 0

    @property
    def total(self) -> int:
        return sum(self.requests.values())

    def snapshot(self) -> RequestCounts:
        return RequestCounts(Counter(self.requests), self.bytes_read, self.bytes_written)

    def since(self, earlier: RequestCounts) -> RequestCounts:
        """What happened after ``earlier`` was taken."""
        return RequestCounts(
            self.requests - earlier.requests,
            self.bytes_read - earlier.bytes_read,
            self.bytes_written - earlier.bytes_written,
        )


class InstrumentedDriver(WrappingDriver):
    """Wraps a driver and reports what it sends: :attr:`counts` holds the
    requests by operation as the wrapped driver counts them (each retry
    attempt, listing page and multipart part is one; see
    :attr:`StorageDriver.request_counts`) since it was wrapped, and each
    call is emitted as a ``storage.request`` event (``op``, ``key``,
    ``bytes``, ``ok``, ``requests``: how many requests it took, and
    ``requests_by_op``: the same by operation (a filesystem read also
    stats its commit record, say); calls
    running at once on one driver may share their requests out unevenly,
    the totals stay exact)."""

    def __init__(self, inner: StorageDriver, emit: Callable[[Event], None] | None = None) -> None:
        super().__init__(inner)
        self._baseline = Counter(inner.request_counts)
        self._bytes_read = 0
        self._bytes_written = 0
        self._emit = emit
        # Read-ahead and listings read through one driver from several threads: ``+=`` is a read and a write.
        self._bytes_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InstrumentedDriver({self.inner!r})"

    @property
    def counts(self) -> RequestCounts:
        """Requests and bytes since this wrapper was made (a fresh copy)."""
        return RequestCounts(Counter(self.inner.request_counts) - self._baseline, self._bytes_read,
                             self._bytes_written)  # fmt: skip

    def _measured(self, op: str, key: str, action: Callable[[], T], size: Callable[[T], int] = lambda _: 0) -> T:
        before = Counter(self.inner.request_counts)
        ok = False
        moved = 0
        started = time.perf_counter()
        try:
            result = action()
            ok = True
            moved = size(result)
            return result
        finally:
            if self._emit is not None:
                # Of a copy: the live counts gain a key when another thread sends a first request of its kind,
                # which a subtraction iterating over them would fail on.
                sent = Counter(self.inner.request_counts) - before
                self._emit(Event("storage.request", {"op": op, "key": key, "bytes": moved, "ok": ok,
                                                     "requests": sum(sent.values()), "requests_by_op": dict(sent),
                                                     "driver": self.name,
                                                     "seconds": time.perf_counter() - started}))  # fmt: skip

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        sent = [0]

        def counted() -> Iterator[BytesLike]:
            for part in parts:
                sent[0] += len(part)
                yield part

        info = self._measured("write", key, lambda: self.inner.write(key, counted(), metadata=metadata,
                                                                      if_absent=if_absent),
                              lambda _: sent[0])  # fmt: skip
        with self._bytes_lock:
            self._bytes_written += sent[0]
        return info

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        data = self._measured("read", key, lambda: self.inner.read(key, start, end), len)
        size = len(data)
        with self._bytes_lock:
            self._bytes_read += size
        return data

    def _stat(self, key: str) -> ObjectInfo:
        return self._measured("stat", key, lambda: self.inner.stat(key))

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        listed = self._measured("list", prefix, lambda: iter(self.inner.list(prefix)))
        yield from listed

    def _delete(self, keys: Sequence[str]) -> None:
        self._measured("delete", ",".join(keys), lambda: self.inner.delete(keys))

    def _replace_metadata(self, key: str, metadata: dict[str, str]) -> ObjectInfo:
        return self._measured("write", key, lambda: self.inner.replace_metadata(key, metadata))
