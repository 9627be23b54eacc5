"""Walking the batches of a ``.log`` as it streams past in chunks, in
bounded memory, checking every CRC on the way. Pure (no I/O).

A copy uploads a segment in read-buffer-sized parts; this sees the same
parts, so a 1 GiB segment is checked and indexed while it is uploaded,
never held whole. Only a v2 batch header that straddles two chunks is
buffered (61 bytes) and the CRC of a batch spanning chunks is computed
incrementally; a magic 0/1 entry (one message, or a compressed wrapper)
is buffered whole, as its header needs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import google_crc32c

from ..errors import FormatError
from ..formats.kafka import (
    BATCH_HEADER_LENGTH,
    BATCH_PREFIX_LENGTH,
    DEFAULT_DECOMPRESSED_LIMIT,
    BatchHeader,
    batch_crc,
    batch_magic,
    crc_name,
    decode_batch_header,
    header_span,
)
from .types import RemoteLogIndexEntry, RemoteLogSegmentId

__all__ = ["BatchScanner", "IndexEntryBuilder", "LogSummary"]

_CRC_START = 21


class BatchScanner:
    """Feed a ``.log`` chunk by chunk; ``on_batch`` sees every whole,
    checked batch header in order. Raises :class:`FormatError` at the batch
    that is damaged (CRC, magic, length) or, from :meth:`finish`, if the log
    ends inside a batch. With ``log_size``, a batch claiming to run past it
    is refused at once, before anything of it is buffered. A magic 0/1
    compressed wrapper is decompressed to read its header: past ``limit``
    bytes, :class:`FormatError`."""

    def __init__(
        self,
        on_batch: Callable[[BatchHeader], None],
        *,
        start_position: int = 0,
        log_size: int | None = None,
        limit: int = DEFAULT_DECOMPRESSED_LIMIT,
    ) -> None:
        self._on_batch = on_batch
        self._limit = limit
        self.batch_count = 0
        self._position = start_position  # of the next byte fed
        self._log_size = log_size
        self._header = bytearray()
        self._span: int | None = None  # bytes the header being buffered needs, once its prefix is in
        self._current: BatchHeader | None = None
        self._remaining = 0  # bytes of the current batch not yet fed
        self._crc = 0

    def feed(self, chunk: bytes | memoryview) -> None:
        view = memoryview(chunk)
        while view:
            if self._current is None:
                need = BATCH_PREFIX_LENGTH if self._span is None else self._span
                taken = min(need - len(self._header), len(view))
                self._header += view[:taken]
                view = view[taken:]
                self._position += taken
                if len(self._header) < need:
                    return
                if self._span is None:
                    self._span = self._checked_span()
                    continue
                self._start_batch()
                if self._current is None:
                    continue
            take = min(self._remaining, len(view))
            self._crc = google_crc32c.extend(self._crc, bytes(view[:take]))
            view = view[take:]
            self._position += take
            self._remaining -= take
            if self._remaining == 0:
                self._close_batch(self._current, self._crc)

    @property
    def _legacy(self) -> bool:
        """Whether the batch being buffered is a magic 0/1 entry."""
        return batch_magic(bytes(self._header[:BATCH_PREFIX_LENGTH])) != 2

    def _checked_span(self) -> int:
        start = self._position - len(self._header)
        span = header_span(bytes(self._header))
        if self._legacy and self._log_size is not None and start + span > self._log_size:
            raise FormatError(f"the message at byte {start} claims {span} bytes, past the end of the log "
                              f"({self._log_size} bytes): the segment is damaged")  # fmt: skip
        return span

    def _start_batch(self) -> None:
        start = self._position - len(self._header)
        header = replace(decode_batch_header(bytes(self._header), limit=self._limit), position=start)
        if not self._legacy:
            self._current = header
            self._crc = google_crc32c.value(bytes(self._header[_CRC_START:]))
            self._remaining = header.size_in_bytes - BATCH_HEADER_LENGTH
        else:  # a magic 0/1 entry, whole
            self._close_batch(header, batch_crc(bytes(self._header)))
        self._header.clear()
        self._span = None

    def _close_batch(self, batch: BatchHeader, crc: int) -> None:
        if crc != batch.crc:
            kind = crc_name(batch.magic)
            raise FormatError(
                f"record batch at position {batch.position} (offsets {batch.base_offset}..{batch.last_offset}) "
                f"fails its {kind}: the segment is damaged; it was not copied"
            )
        self.batch_count += 1
        self._current = None
        self._on_batch(batch)

    def finish(self) -> None:
        """:class:`FormatError` if the log ended mid-batch."""
        if self._current is not None or self._header:
            raise FormatError(f"the log ends inside a record batch at byte {self._position}: the segment is truncated")


@dataclass
class IndexEntryBuilder:
    """Groups whole batches into :class:`RemoteLogIndexEntry` runs of at
    least ``granularity`` bytes (a larger batch gets an entry of its own)."""

    segment_id: RemoteLogSegmentId
    segment_start_offset: int
    granularity: int
    entries: list[RemoteLogIndexEntry] = field(default_factory=list)
    _run: list[BatchHeader] = field(default_factory=list)
    _bytes: int = 0

    def add(self, batch: BatchHeader) -> None:
        self._run.append(batch)
        self._bytes += batch.size_in_bytes
        if self._bytes >= self.granularity:
            self._close()

    def finish(self) -> list[RemoteLogIndexEntry]:
        if self._run:
            self._close()
        return self.entries

    def _close(self) -> None:
        first, last = self._run[0], self._run[-1]
        self.entries.append(
            RemoteLogIndexEntry(
                self.segment_id,
                self.segment_start_offset,
                first_offset=first.base_offset,
                last_offset=last.last_offset,
                first_timestamp=first.max_timestamp if first.log_append_time else first.base_timestamp,
                last_timestamp=max(b.max_timestamp for b in self._run),
                position=first.position,
                length=last.position + last.size_in_bytes - first.position,
            )
        )
        self._run = []
        self._bytes = 0


@dataclass
class LogSummary:
    """What a segment's batches say about it: offsets, max timestamp and
    the first offset of each partition leader epoch in it."""

    base_offset: int
    last_offset: int = -1
    max_timestamp: int = -1
    batch_count: int = 0
    leader_epochs: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.last_offset = self.base_offset - 1

    def add(self, batch: BatchHeader) -> None:
        if batch.base_offset < self.base_offset or batch.base_offset <= self.last_offset:
            raise FormatError(
                f"record batch at position {batch.position} starts at offset {batch.base_offset}, not after "
                f"{self.last_offset} (segment base {self.base_offset}): offsets must increase"
            )
        self.last_offset = batch.last_offset
        self.max_timestamp = max(self.max_timestamp, batch.max_timestamp)
        self.batch_count += 1
        epoch = batch.partition_leader_epoch
        if epoch >= 0 and (not self.leader_epochs or epoch > max(self.leader_epochs)):
            self.leader_epochs[epoch] = batch.base_offset
