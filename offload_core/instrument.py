"""Counting every storage request, and reporting it as an event."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from .hooks import Event
from .model import ObjectInfo
from .storage import STALE_UPLOAD_AGE, BytesLike, StorageDriver

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


class InstrumentedDriver(StorageDriver):
    """Wraps a driver: each call is one counted request, emitted as a
    ``storage.request`` event (``op``, ``key``, ``bytes``, ``ok``).

    A multipart write counts as one ``write`` request per part plus one
    ``write`` for completing it, as object stores bill it.
    """

    def __init__(self, inner: StorageDriver, emit: Callable[[Event], None] | None = None) -> None:
        self.inner = inner
        self.counts = RequestCounts()
        self._emit = emit
        self.name = inner.name  # type: ignore[misc]
        self.min_part_size = inner.min_part_size

    def __repr__(self) -> str:
        return f"InstrumentedDriver({self.inner!r})"

    def _record(self, op: str, key: str, size: int, ok: bool, requests: int = 1) -> None:
        self.counts.requests[op] += requests
        if self._emit is not None:
            self._emit(Event("storage.request", {"op": op, "key": key, "bytes": size, "ok": ok, "requests": requests}))

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        sent = [0, 0]  # parts, bytes

        def counted() -> Iterator[BytesLike]:
            for part in parts:
                sent[0] += 1
                sent[1] += len(part)
                yield part

        ok = False
        try:
            info = self.inner._write(key, counted(), metadata, if_absent)
            ok = True
            return info
        finally:
            self.counts.bytes_written += sent[1] if ok else 0
            self._record("write", key, sent[1], ok, requests=sent[0] + 1)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        try:
            data = self.inner._read(key, start, end)
        except BaseException:
            self._record("read", key, 0, False)
            raise
        self.counts.bytes_read += len(data)
        self._record("read", key, len(data), True)
        return data

    def _stat(self, key: str) -> ObjectInfo:
        return self._counted("stat", key, lambda: self.inner._stat(key))

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        return iter(self._counted("list", prefix, lambda: list(self.inner._list(prefix))))

    def _delete(self, keys: Sequence[str]) -> None:
        self._counted("delete", ",".join(keys), lambda: self.inner._delete(keys))

    def _counted(self, op: str, key: str, action: Callable[[], T]) -> T:
        ok = False
        try:
            result = action()
            ok = True
            return result
        finally:
            self._record(op, key, 0, ok)

    def sweep_stale_uploads(
        self, older_than: float = STALE_UPLOAD_AGE, *, dry_run: bool = False
    ) -> tuple[ObjectInfo, ...]:
        return self.inner.sweep_stale_uploads(older_than, dry_run=dry_run)

    def close(self) -> None:
        self.inner.close()
