"""Reading a remote Kafka log as a consumer would: records from an offset
on, across segments, with read-committed isolation, and the first offset
at a timestamp. Built on the verbs of a :class:`~.segment_source.SegmentSource` only
(manifests, ``fetch_index``, lazy ``fetch_log_segment``), so a read from
the middle of a 1 GiB segment costs the offset index once, then one GET
per read buffer. Where copies overlap (leaders that rolled at other
offsets), each offset is read from the one segment serving it
(:meth:`RemoteStorageManager.served_ranges`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from typing import IO

from ..errors import FormatError, InvalidRangeError, NoSuchIndexError
from ..formats import kafka
from .epoch_state import ServedRange
from .index_check import check_entry_batch, entry_error
from .isolation import Isolation
from .log_batches import read_batches
from .segment_source import SegmentSource
from .types import IndexType, RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition

__all__ = ["EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP", "Isolation", "RemoteLogReader", "RemoteRecord"]

# Kafka's ListOffsets special timestamps.
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP = -1, -2, -3


@dataclass(frozen=True)
class RemoteRecord:
    """A record with what Spark's Kafka source reports beside it."""

    record: kafka.Record
    leader_epoch: int
    log_append_time: bool


class RemoteLogReader:
    """One partition's committed remote segments, read in offset order:
    :attr:`ranges` are the offsets each serves, :attr:`segments` those
    segments in that order."""

    def __init__(self, rsm: SegmentSource, topic_id_partition: TopicIdPartition) -> None:
        self.rsm = rsm
        self.topic_id_partition = topic_id_partition
        self.ranges = rsm.served_ranges(topic_id_partition)
        self._txn_indexes: dict[RemoteLogSegmentId, list[kafka.AbortedTxn]] = {}
        self._aborted: dict[int, list[kafka.AbortedTxn]] = {}

    @property
    def segments(self) -> list[RemoteLogSegmentMetadata]:
        return self._numbered[0]

    @property
    def _numbers(self) -> dict[RemoteLogSegmentId, int]:
        return self._numbered[1]

    @functools.cached_property
    def _numbered(self) -> tuple[list[RemoteLogSegmentMetadata], dict[RemoteLogSegmentId, int]]:
        """:attr:`segments`, and each one's number there. Made when first
        asked: a read's planning that asks neither holds only the ranges."""
        segments: list[RemoteLogSegmentMetadata] = []
        numbers: dict[RemoteLogSegmentId, int] = {}
        for served in self.ranges:
            if served.segment.segment_id not in numbers:
                numbers[served.segment.segment_id] = len(segments)
                segments.append(served.segment)
        return segments, numbers

    def batches(
        self,
        start_offset: int,
        *,
        max_bytes: int | None = None,
        end_offset: int | None = None,
        max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT,
    ) -> Iterator[tuple[kafka.BatchHeader, bytes]]:
        """Whole batches whose last offset is at least ``start_offset``
        (and base offset at most ``end_offset``), with their bytes; at most
        ``max_bytes`` of them, but always the first. A batch that straddles
        the offset where one overlapping copy hands over to the next is
        yielded from both (whole batches; :meth:`records` gives each offset
        once). A magic 0/1 compressed wrapper is decompressed to read its
        header: past ``max_decompressed_bytes``, :class:`FormatError`."""
        for _, batch, data, _ in self._walk(start_offset, max_bytes, end_offset, max_decompressed_bytes):
            yield batch, data

    def _walk(
        self, start_offset: int, max_bytes: int | None, end_offset: int | None, limit: int
    ) -> Iterator[tuple[int, kafka.BatchHeader, bytes, ServedRange]]:
        """:meth:`batches`, each with the number of its segment in
        :attr:`segments` and the range of offsets it is read for."""
        wanted = [r for r in self.ranges if r.last >= start_offset and (end_offset is None or r.first <= end_offset)]
        served = 0
        ahead: dict[int, IO[bytes]] = {}  # next segments' streams, opened early so their read-ahead starts
        try:
            for number, span in enumerate(wanted):
                following = wanted[number + 1].segment if number + 1 < len(wanted) else None
                near_end = functools.partial(self._open_ahead, following, number + 1, ahead)
                first = max(start_offset, span.first)
                batches = self._segment_batches(span.segment, first, limit, ahead.pop(number, None), near_end)
                with contextlib.closing(batches):
                    for batch, data in batches:
                        if batch.base_offset > span.last:
                            break
                        if end_offset is not None and batch.base_offset > end_offset:
                            return
                        if max_bytes is not None and served and served + batch.size_in_bytes > max_bytes:
                            return
                        served += batch.size_in_bytes
                        yield self._numbers[span.segment.segment_id], batch, data, span
        finally:
            for stream in ahead.values():
                stream.close()  # a read stopped early: give back what was read ahead

    def _open_ahead(self, segment: RemoteLogSegmentMetadata | None, number: int, ahead: dict[int, IO[bytes]]) -> None:
        if segment is not None and number not in ahead and self.rsm.log_size(segment) > 0:
            ahead[number] = self.rsm.fetch_log_segment(segment, 0)

    def _segment_batches(
        self,
        segment: RemoteLogSegmentMetadata,
        start_offset: int,
        limit: int,
        opened: IO[bytes] | None = None,
        near_end: Callable[[], None] | None = None,
    ) -> Generator[tuple[kafka.BatchHeader, bytes]]:
        """Batches of one segment from ``start_offset``; ``opened`` is its
        stream from byte 0 if one was opened ahead. With read-ahead on,
        ``near_end`` is called once the reader is within one read-ahead
        range of the segment's end, so the next segment's download starts
        before this one is finished (as it does across ledgers)."""
        floor = kafka.IndexEntry(segment.start_offset, 0)
        if start_offset > segment.start_offset:
            floor = kafka.lookup_offset(self.rsm.offset_index(segment), start_offset, segment.start_offset)
        position = floor.position
        size = self.rsm.log_size(segment)
        if size == 0:
            if opened is not None:
                opened.close()
            return
        if opened is not None and position:
            opened.seek(position)
        pool = self.rsm.read_ahead
        margin = pool.range_size if pool is not None else None
        with opened if opened is not None else self.rsm.fetch_log_segment(segment, position) as stream:
            batches = read_batches(stream, position, size, limit=limit)
            if position:
                batches = self._from_index_entry(segment, floor, batches)
            for batch, data in batches:
                if near_end is not None and margin is not None and size - batch.position <= margin:
                    near_end()
                    near_end = None
                if batch.last_offset >= start_offset:
                    yield batch, data

    def _from_index_entry(
        self,
        segment: RemoteLogSegmentMetadata,
        entry: kafka.IndexEntry,
        batches: Iterator[tuple[kafka.BatchHeader, bytes]],
    ) -> Iterator[tuple[kafka.BatchHeader, bytes]]:
        """``batches``, read from an offset-index entry's position, once the
        first shows the entry points where it says (else records would be
        skipped): :class:`FormatError` naming the index otherwise."""
        key = self.rsm.index_key(segment, IndexType.OFFSET)
        try:
            first = next(batches, None)
        except FormatError as exc:
            raise entry_error(key, entry, f"does not point at the start of a batch ({exc})") from None
        if first is None:
            return
        check_entry_batch(key, entry, first[0])
        yield first
        yield from batches

    def records(
        self,
        start_offset: int,
        *,
        max_bytes: int | None = None,
        end_offset: int | None = None,
        isolation: Isolation = Isolation.READ_UNCOMMITTED,
        max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT,
    ) -> Iterator[RemoteRecord]:
        """Records from ``start_offset`` (to ``end_offset`` inclusive) as a
        consumer gets them: control records never. With READ_COMMITTED, as
        Kafka fetches: not the records of aborted transactions (the
        segments' ``.txnindex``, searched from the segment read on), and
        nothing from the :attr:`last_stable_offset` on, where a transaction
        without a marker in the remote log begins. Each record is yielded
        as it is decompressed and parsed; a batch whose records expand past
        ``max_decompressed_bytes`` raises :class:`FormatError` when reached.
        A ``start_offset`` past :attr:`log_end_offset` raises
        :class:`InvalidRangeError`, as Kafka answers OFFSET_OUT_OF_RANGE; at
        it, there is nothing (yet) to read."""
        end = self.log_end_offset
        if end is not None and start_offset > end:
            raise InvalidRangeError(f"offset {start_offset} is past the end of the remote log of "
                                    f"{self.topic_id_partition.topic_partition} "
                                    f"(offsets {self.log_start_offset}..{end - 1})")  # fmt: skip
        committed = isolation is Isolation.READ_COMMITTED
        stable = self.last_stable_offset if committed else None
        if stable is not None:
            end_offset = stable - 1 if end_offset is None else min(end_offset, stable - 1)
            if end_offset < start_offset:
                return
        for number, batch, data, span in self._walk(start_offset, max_bytes, end_offset, max_decompressed_bytes):
            if batch.is_control:
                continue
            if committed and batch.is_transactional and kafka.is_aborted(self._aborted_in(number), batch):
                continue
            epoch = batch.partition_leader_epoch
            first, last = max(start_offset, span.first), span.last if end_offset is None else min(end_offset, span.last)
            for record in kafka.iter_records(data, batch, limit=max_decompressed_bytes):
                if first <= record.offset <= last:
                    yield RemoteRecord(record, epoch, batch.log_append_time)

    @functools.cached_property
    def undecided_transaction(self) -> kafka.ProducerSnapshotEntry | None:
        """The producer whose transaction, open at the end of the remote log
        (its COMMIT or ABORT marker not tiered yet, or not written), began
        first: from the producer snapshot of the last remote segment."""
        if not self.ranges:
            return None
        raw = self.rsm.fetch_index(self.ranges[-1].segment, IndexType.PRODUCER_SNAPSHOT).read()
        return kafka.first_undecided(kafka.decode_producer_snapshot(raw))

    @property
    def last_stable_offset(self) -> int | None:
        """Where read_committed reads stop (``None``: they do not)."""
        undecided = self.undecided_transaction
        return None if undecided is None else undecided.current_txn_first_offset

    def aborted_transactions(self, segment: RemoteLogSegmentMetadata) -> list[kafka.AbortedTxn]:
        """The aborted transactions overlapping ``segment`` (one of
        :attr:`segments`), collected as Kafka does from its ``.txnindex``
        and those of the segments after it, each fetched once through
        :meth:`RemoteStorageManager.fetch_index` (:class:`FormatError`
        naming an index that is not the size its manifest recorded)."""
        return self._aborted_in(self._numbers[segment.segment_id])

    def _aborted_in(self, number: int) -> list[kafka.AbortedTxn]:
        """Aborted transactions overlapping segment ``number``, collected as Kafka does."""
        if number not in self._aborted:
            segment = self.segments[number]
            indexes = (self._txn_index(s) for s in self.segments[number:])
            self._aborted[number] = kafka.collect_aborted_txns(indexes, segment.start_offset, segment.end_offset + 1)
        return self._aborted[number]

    def _txn_index(self, segment: RemoteLogSegmentMetadata) -> list[kafka.AbortedTxn]:
        key = segment.segment_id
        if key not in self._txn_indexes:
            try:
                raw = self.rsm.fetch_index(segment, IndexType.TRANSACTION).read()
            except NoSuchIndexError:
                raw = b""  # Kafka writes no .txnindex without aborted transactions
            self._txn_indexes[key] = kafka.decode_txn_index(raw)
        return self._txn_indexes[key]

    @property
    def log_start_offset(self) -> int | None:
        """The first offset of the remote log (``None`` without segments)."""
        return self.ranges[0].first if self.ranges else None

    @property
    def log_end_offset(self) -> int | None:
        """One past the last offset of the remote log (``None`` without segments)."""
        return self.ranges[-1].last + 1 if self.ranges else None

    def offset_for_timestamp(
        self, timestamp: int, *, max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT
    ) -> kafka.TimestampAndOffset | None:
        """Kafka's ``findOffsetByTimestamp`` over the remote log: the first
        record whose timestamp is at least ``timestamp``, or ``None``.
        Records are decompressed up to ``max_decompressed_bytes`` a batch.
        Kafka's special timestamps are answered as its ListOffsets answers
        them: -2 (earliest) the log's start offset and -1 (latest) its end
        offset, both with timestamp -1; -3 (max timestamp) the first record
        with the largest timestamp. Any other negative timestamp raises
        :class:`InvalidRangeError` naming it."""
        if timestamp < 0:
            return self._special_offset(timestamp, max_decompressed_bytes)
        for span in self.ranges:
            segment = span.segment
            if segment.max_timestamp_ms < timestamp:
                continue
            raw = self.rsm.fetch_index(segment, IndexType.TIMESTAMP).read()
            times = kafka.decode_time_index(raw, segment.start_offset)
            floor = kafka.lookup_time(times, timestamp, segment.start_offset)
            for batch, data in self._segment_batches(segment, max(floor.offset, span.first), max_decompressed_bytes):
                if batch.base_offset > span.last:
                    break
                at_zero = replace(batch, position=0)
                found = kafka.first_record_at_or_after(data, at_zero, timestamp, span.first,
                                                      limit=max_decompressed_bytes)  # fmt: skip
                if found is not None and found.offset <= span.last:
                    return found
        return None

    def _special_offset(self, timestamp: int, max_decompressed_bytes: int) -> kafka.TimestampAndOffset | None:
        if timestamp not in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP):
            raise InvalidRangeError(f"timestamp {timestamp} is neither milliseconds since the epoch nor one of "
                                    "Kafka's -1 (latest), -2 (earliest), -3 (max timestamp)")  # fmt: skip
        if not self.ranges:
            return None
        if timestamp == MAX_TIMESTAMP:
            largest = max(s.max_timestamp_ms for s in self.segments)
            # Magic 0 records have no timestamp (-1): then there is no answer.
            return (
                self.offset_for_timestamp(largest, max_decompressed_bytes=max_decompressed_bytes)
                if largest >= 0
                else None
            )
        if timestamp == EARLIEST_TIMESTAMP:
            segment, offset = self.ranges[0].segment, self.ranges[0].first
        else:
            segment, offset = self.ranges[-1].segment, self.ranges[-1].last + 1
        epochs = [epoch for epoch, start in segment.segment_leader_epochs.items() if start <= offset]
        return kafka.TimestampAndOffset(-1, offset, max(epochs, default=None))  # ListOffsets gives no timestamp
