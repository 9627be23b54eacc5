"""The bytes of one data object as one reader consumes them: a single
window for random reads, a stream of ranges read ahead for sequential
ones."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from ..errors import FormatError
from ..storage import StorageDriver
from .read_ahead import ReadAheadPool, SharedRange

__all__ = ["MAX_REQUEST", "ObjectBytes"]

# Largest single range request: a larger entry is fetched in pieces, so no
# length read from an object is ever one allocation of its own.
MAX_REQUEST = 8 * 2**20


class ObjectBytes:
    """Bytes ``[0, end)`` of object ``key``.

    :meth:`get` serves a random read from one window of ``buffer_size``
    bytes fetched where the reader asks (one GET, as Pulsar's read buffer
    does). Once the reader says it reads sequentially, ranges of the
    pool's range size are fetched ahead of it on the pool's threads,
    aligned to multiples of the range size so that readers of one object
    ask for the same ranges and share their downloads. A read elsewhere
    cancels what was read ahead. ``corrupt(position, problem)`` makes the
    error for an object that ends before ``end``.
    """

    def __init__(
        self,
        driver: StorageDriver,
        key: str,
        end: int,
        *,
        buffer_size: int,
        pool: ReadAheadPool | None,
        corrupt: Callable[[int, str], FormatError],
    ) -> None:
        self._driver = driver
        self._key = key
        self._end = end
        self._buffer_size = buffer_size
        self._pool = pool
        self._corrupt = corrupt
        self._window_start = 0
        self._window = b""
        self._stream: deque[SharedRange] = deque()
        self._stream_next = 0

    def get(self, start: int, count: int, *, sequential: bool) -> tuple[bytes, int, int]:
        """A buffer holding bytes ``[start, start + count)``, where ``start``
        is in it, and how many bytes from ``start`` on it holds (at least
        ``count``). Raises :class:`FormatError` (through ``corrupt``) when
        the object ends first, and what the driver raises."""
        at = start - self._window_start
        if at >= 0 and at + count <= len(self._window):
            return self._window, at, len(self._window) - at
        if start + count > self._end:
            raise self._corrupt(start, f"needs {count} bytes past the end of the data object ({self._end})")
        if sequential and self._pool is not None:
            return self._from_stream(self._pool, start, count)
        self._drop_stream()
        stop = min(start + max(count, self._buffer_size), self._end)
        self._window_start, self._window = start, self._fetch(start, stop)
        return self._window, 0, len(self._window)

    def close(self) -> None:
        self._drop_stream()
        self._window = b""

    # -- random reads --------------------------------------------------------

    def _fetch(self, start: int, stop: int) -> bytes:
        pieces = []
        for piece_start in range(start, stop, MAX_REQUEST):
            piece_stop = min(piece_start + MAX_REQUEST, stop)
            pieces.append(self._checked(piece_start, piece_stop, self._driver.read(self._key, piece_start, piece_stop)))
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def _checked(self, start: int, stop: int, data: bytes) -> bytes:
        if len(data) != stop - start:
            raise self._corrupt(start, f"data object ends early ({len(data)} of {stop - start} bytes came back)")
        return data

    # -- sequential reads ----------------------------------------------------

    def _from_stream(self, pool: ReadAheadPool, start: int, count: int) -> tuple[bytes, int, int]:
        stream = self._stream
        if not stream or not stream[0].start <= start < self._stream_next:
            self._drop_stream()
            self._stream_next = start
        while stream and stream[0].end <= start:
            pool.release(self._driver, stream.popleft())
        while self._stream_next < start + count:
            self._extend(pool, needed=True)
        self._read_ahead(pool)
        first = stream[0]
        data = self._checked(first.start, first.end, first.future.result())
        at = start - first.start
        if at + count <= len(data):
            self._window_start, self._window = first.start, data
            return data, at, len(data) - at
        # The bytes straddle ranges: copy just them, and keep serving the
        # ranges themselves (no copy) for what follows.
        pieces, need = [data[at:]], count - (len(data) - at)
        for shared in list(stream)[1:]:
            if need <= 0:
                break
            piece = self._checked(shared.start, shared.end, shared.future.result())
            pieces.append(piece[:need])
            need -= len(piece)
        joined = b"".join(pieces)
        return joined, 0, len(joined)

    def _read_ahead(self, pool: ReadAheadPool) -> None:
        while (
            self._stream_next < self._end and sum(r.size for r in self._stream) + pool.range_size <= pool.reader_bytes
        ):
            if not self._extend(pool, needed=False):
                return

    def _extend(self, pool: ReadAheadPool, *, needed: bool) -> bool:
        start = self._stream_next
        stop = min((start // pool.range_size + 1) * pool.range_size, self._end)
        shared = pool.acquire(self._driver, self._key, start, stop, needed=needed)
        if shared is None:
            return False
        self._stream.append(shared)
        self._stream_next = stop
        return True

    def _drop_stream(self) -> None:
        if self._pool is not None:
            while self._stream:
                self._pool.release(self._driver, self._stream.popleft())
        self._stream.clear()
