"""The bytes of one data object as its readers consume them: one window
for random reads, and a stream of ranges read ahead for each sequential
reader."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from ...errors import FormatError
from ...storage import StorageDriver
from .read_ahead import ReadAheadPool, SharedRange

__all__ = ["MAX_REQUEST", "ObjectBytes", "Stream"]

# Largest single range request: a larger entry is fetched in pieces, so no
# length read from an object is ever one allocation of its own.
MAX_REQUEST = 8 * 2**20


class Stream:
    """One sequential reader's ranges: consecutive, the first holding (or
    about to hold) where the reader is, the rest read ahead."""

    def __init__(self) -> None:
        self.ranges: deque[SharedRange] = deque()
        self.next = 0

    def held_bytes(self) -> int:
        return sum(shared.size for shared in self.ranges)


class ObjectBytes:
    """Bytes ``[0, end)`` of object ``key``.

    :meth:`get` without a stream serves a random read from one window of
    ``buffer_size`` bytes fetched where the reader asks (one GET, as
    Pulsar's read buffer does). With a :class:`Stream` (one per
    sequential reader, from :meth:`stream`), ranges of the pool's range
    size are fetched ahead of that reader on the pool's threads, aligned to
    multiples of the range size so that readers of one object ask for the
    same ranges and share their downloads; a read outside the stream's
    ranges starts it over where the reader now is. ``corrupt(position,
    problem)`` makes the error for an object that ends before ``end``.
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
        self._streams: set[Stream] = set()

    def stream(self) -> Stream:
        """A new stream for one sequential reader; nothing is fetched until
        it is first read. Give it back with :meth:`drop`."""
        stream = Stream()
        self._streams.add(stream)
        return stream

    def warm(self, stream: Stream, start: int) -> None:
        """Start ``stream`` at byte ``start`` and read ahead from there, as
        far as the reader's allowance and the pool's budget admit, without
        waiting for anything (so the reader's first read finds it under
        way)."""
        if self._pool is None or start >= self._end:
            return
        self._release(stream)
        stream.next = start
        while stream.next < self._end and stream.held_bytes() + self._pool.range_size <= self._pool.reader_bytes:
            if not self._extend(self._pool, stream, needed=False):
                break

    def drop(self, stream: Stream) -> None:
        """Cancel what ``stream`` read ahead and free its budget."""
        self._streams.discard(stream)
        self._release(stream)

    def get(self, start: int, count: int, stream: Stream | None = None) -> tuple[bytes, int, int]:
        """A buffer holding bytes ``[start, start + count)``, where ``start``
        is in it, and how many bytes from ``start`` on it holds (at least
        ``count``). Raises :class:`FormatError` (through ``corrupt``) when
        the object ends first, and what the driver raises."""
        at = start - self._window_start
        if at >= 0 and at + count <= len(self._window):
            return self._window, at, len(self._window) - at
        if start + count > self._end:
            raise self._corrupt(start, f"needs {count} bytes past the end of the data object ({self._end})")
        if stream is not None and self._pool is not None:
            return self._from_stream(self._pool, stream, start, count)
        stop = min(start + max(count, self._buffer_size), self._end)
        self._window_start, self._window = start, self._fetch(start, stop)
        return self._window, 0, len(self._window)

    def close(self) -> None:
        """Drop every stream and the window."""
        for stream in list(self._streams):
            self.drop(stream)
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

    def _from_stream(self, pool: ReadAheadPool, stream: Stream, start: int, count: int) -> tuple[bytes, int, int]:
        ranges = stream.ranges
        if not ranges or not ranges[0].start <= start < stream.next:
            self._release(stream)
            stream.next = start
        while ranges and ranges[0].end <= start:
            pool.release(self._driver, ranges.popleft())
        while stream.next < start + count:
            self._extend(pool, stream, needed=True)
        while stream.next < self._end and stream.held_bytes() + pool.range_size <= pool.reader_bytes:
            if not self._extend(pool, stream, needed=False):
                break
        first = ranges[0]
        data = self._checked(first.start, first.end, self._bytes_of(first))
        at = start - first.start
        if at + count <= len(data):
            self._window_start, self._window = first.start, data
            return data, at, len(data) - at
        # The bytes straddle ranges: copy just them, and keep serving the
        # ranges themselves (no copy) for what follows.
        pieces, need = [data[at:]], count - (len(data) - at)
        for shared in list(ranges)[1:]:
            if need <= 0:
                break
            piece = self._checked(shared.start, shared.end, self._bytes_of(shared))
            pieces.append(piece[:need])
            need -= len(piece)
        joined = b"".join(pieces)
        return joined, 0, len(joined)

    def _bytes_of(self, shared: SharedRange) -> bytes:
        """A range's bytes; one whose download was cancelled (its pool was
        closed under the reader) or failed is fetched here instead. A range
        is read ahead before the reader needs it, maybe while the store was
        failing and has since recovered: its error is not this read's, so
        the reader asks once more and meets the store as it is now."""
        try:
            return shared.future.result()
        except Exception:  # CancelledError too: its pool was closed under the reader
            return self._driver.read(self._key, shared.start, shared.end)

    def _extend(self, pool: ReadAheadPool, stream: Stream, *, needed: bool) -> bool:
        start = stream.next
        stop = min((start // pool.range_size + 1) * pool.range_size, self._end)
        if not stream.ranges:
            # A stream starting: its first range is one read buffer, so the
            # reader decodes while the larger, aligned ranges after it are
            # still arriving, instead of waiting for a whole range first.
            stop = min(stop, start + self._buffer_size)
        shared = pool.acquire(self._driver, self._key, start, stop, needed=needed)
        if shared is None:
            return False
        stream.ranges.append(shared)
        stream.next = stop
        return True

    def _release(self, stream: Stream) -> None:
        if stream.ranges and self._window_start >= stream.ranges[0].start and self._window_start < stream.next:
            self._window = b""  # the window is one of the ranges let go: do not keep it alive
        if self._pool is not None:
            while stream.ranges:
                self._pool.release(self._driver, stream.ranges.popleft())
        stream.ranges.clear()
