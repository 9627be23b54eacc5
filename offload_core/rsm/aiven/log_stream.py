"""A lazy stream of a segment's original ``.log`` bytes out of the chunks
Aiven's plugin stored, for :meth:`.storage.AivenRemoteStorage.fetch_log_segment`.

Chunks are fetched in runs: consecutive chunks of about one read buffer of
stored bytes (one read-ahead range with a pool), each run one ranged GET,
never past the chunk holding the last byte asked for. With a
:class:`ReadAheadPool` the stream reads ahead as our own layout's stream
does (:mod:`..segment_stream`): the runs after the reader's are requested on
the pool's threads, within the reader's allowance and the pool's budget,
from the moment the stream is opened.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ...offload.reading.read_ahead import ReadAheadPool, SharedRange
from ...storage import StorageDriver
from ..segment_stream import RangedStream
from .chunk_index import Chunk
from .segment_reader import AivenSegmentReader

__all__ = ["AivenLogStream"]


class AivenLogStream(RangedStream):
    """Original bytes ``[start, stop)`` of the segment ``reader`` reads, as
    a binary file object. Raises what :meth:`AivenSegmentReader.decode_run`
    and the driver raise. Closing it gives back what was read ahead."""

    def __init__(
        self,
        reader: AivenSegmentReader,
        driver: StorageDriver,
        start: int,
        stop: int,
        *,
        buffer_size: int,
        pool: ReadAheadPool | None = None,
    ) -> None:
        super().__init__(start, stop)
        self._reader = reader
        self._driver = driver
        self._pool = pool
        self._run_bytes = pool.range_size if pool is not None else buffer_size
        self._buffer_start = 0
        self._buffer = b""
        self._ahead: deque[tuple[list[Chunk], SharedRange]] = deque()
        size = reader.manifest.chunk_index.original_chunk_size
        self._last_chunk = (stop - 1) // size if stop > 0 else -1
        if pool is not None and start < stop:
            self._read_ahead_from(start // size)

    def readinto(self, buffer: Any) -> int:
        if self.closed:
            raise ValueError("read from a closed segment stream")
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._stop - self._position)
        if want <= 0:
            return 0
        at = self._position - self._buffer_start
        if not 0 <= at < len(self._buffer):
            self._load(self._position // self._reader.manifest.chunk_index.original_chunk_size)
            at = self._position - self._buffer_start
        count = min(want, len(self._buffer) - at)
        view[:count] = self._buffer[at : at + count]
        self._position += count
        return count

    def close(self) -> None:
        if not self.closed:
            self._release_ahead()
            self._buffer = b""
        super().close()

    def _load(self, index: int) -> None:
        """Make the run starting at chunk ``index`` the buffer."""
        kept = self._reader.cached(index)
        if kept is not None:
            chunk = self._reader.chunks[index]
            self._buffer_start, self._buffer = chunk.original_start, kept
            return
        if self._ahead and self._ahead[0][0][0].index == index:
            run, shared = self._ahead.popleft()
            stored = self._bytes_of(run, shared)
        else:
            self._release_ahead()
            run = self._run_from(index)
            stored = self._reader.fetch_run(run)
        self._buffer_start, self._buffer = run[0].original_start, b"".join(self._reader.decode_run(run, stored))
        if self._pool is not None:
            self._read_ahead_from(run[-1].index + 1)

    def _run_from(self, index: int) -> list[Chunk]:
        run: list[Chunk] = []
        stored = 0
        for chunk in self._reader.chunks[index : self._last_chunk + 1]:
            if run and stored + chunk.stored_end - chunk.stored_start > self._run_bytes:
                break
            run.append(chunk)
            stored += chunk.stored_end - chunk.stored_start
        return run

    def _read_ahead_from(self, index: int) -> None:
        pool = self._pool
        assert pool is not None
        if self._ahead:
            index = self._ahead[-1][0][-1].index + 1
        held = sum(shared.size for _, shared in self._ahead)
        while index <= self._last_chunk:
            run = self._run_from(index)
            size = run[-1].stored_end - run[0].stored_start
            if held + size > pool.reader_bytes:
                return
            shared = pool.acquire(self._driver, self._reader.log_key, run[0].stored_start, run[-1].stored_end,
                                  needed=False)  # fmt: skip
            if shared is None:
                return
            self._ahead.append((run, shared))
            held += size
            index = run[-1].index + 1

    def _bytes_of(self, run: list[Chunk], shared: SharedRange) -> bytes:
        """A run read ahead; one whose download failed or was cancelled is
        fetched now (the store may have recovered since it was asked for)."""
        assert self._pool is not None
        try:
            data = shared.future.result()
        except Exception:  # CancelledError too: its pool was closed under the reader
            data = b""
        finally:
            self._pool.release(self._driver, shared)
        return data if len(data) == shared.size else self._reader.fetch_run(run)

    def _release_ahead(self) -> None:
        while self._ahead:
            _, shared = self._ahead.popleft()
            if self._pool is not None:
                self._pool.release(self._driver, shared)
