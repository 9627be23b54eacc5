"""A lazy, seekable byte stream over a range of one remote object.

What :meth:`RemoteStorageManager.fetch_log_segment` returns: nothing is
fetched until it is read, then one read buffer per GET (or, with a
read-ahead pool, several aligned ranges in flight ahead of the reader,
within the pool's budgets). A 1 GiB segment read from its middle holds a
few buffers at a time, never the segment.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from ..errors import FormatError
from ..offload.reading.object_bytes import ObjectBytes
from ..offload.reading.read_ahead import ReadAheadPool
from ..storage import StorageDriver

__all__ = ["RangedStream", "RemoteSegmentStream"]


class RangedStream(io.RawIOBase):
    """A readable, seekable binary file object over bytes ``[start, stop)``
    of something: positions are relative to ``start``; subclasses serve
    ``readinto`` from ``self._position``."""

    def __init__(self, start: int, stop: int) -> None:
        super().__init__()
        self._start = start
        self._stop = stop
        self._position = start

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position - self._start

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: self._start, io.SEEK_CUR: self._position, io.SEEK_END: self._stop}[whence]
        target = base + offset
        if target < self._start:
            raise ValueError(f"cannot seek before the start of the range (to {target - self._start})")
        self._position = target
        return target - self._start


class RemoteSegmentStream(RangedStream):
    """Bytes ``[start, stop)`` of ``key`` as a binary file object.

    Raises :class:`FormatError` if the object turns out shorter than
    ``stop`` (it changed or was damaged under the reader), and what the
    driver raises. Closing it cancels whatever was read ahead, then calls
    ``on_close`` with the bytes served."""

    def __init__(
        self,
        driver: StorageDriver,
        key: str,
        start: int,
        stop: int,
        *,
        buffer_size: int,
        pool: ReadAheadPool | None = None,
        on_close: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(start, stop)
        self._on_close = on_close
        self._served = 0
        self._key = key
        self._bytes = ObjectBytes(driver, key, stop, buffer_size=buffer_size, pool=pool, corrupt=self._corrupt)
        self._stream = self._bytes.stream() if pool is not None else None
        if self._stream is not None:
            self._bytes.warm(self._stream, start)

    def _corrupt(self, position: int, problem: str) -> FormatError:
        return FormatError(f"remote object {self._key} at byte {position}: {problem}; it changed or is damaged")

    def readinto(self, buffer: Any) -> int:
        if self.closed:
            raise ValueError("read from a closed remote segment stream")
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._stop - self._position)
        if want <= 0:
            return 0
        data, at, available = self._bytes.get(self._position, 1, self._stream)
        count = min(want, available)
        view[:count] = data[at : at + count]
        self._position += count
        self._served += count
        return count

    def readall(self) -> bytes:
        pieces = []
        while self._position < self._stop:
            data, at, available = self._bytes.get(self._position, 1, self._stream)
            count = min(available, self._stop - self._position)
            pieces.append(data[at : at + count])
            self._position += count
            self._served += count
        return b"".join(pieces)

    def close(self) -> None:
        if not self.closed:
            self._bytes.close()
            if self._on_close is not None:
                self._on_close(self._served)
        super().close()
