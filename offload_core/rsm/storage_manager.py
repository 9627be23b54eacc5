"""KIP-405's RemoteStorageManager over any storage driver: the interface
the KIP was first written with (copy, list, index entries, read by entry,
cleanup), on top of the one Kafka ships (:mod:`.shipped_verbs`).

With a :class:`RemoteLogMetadataManager` it also records every copy
attempt's state, as Kafka's RemoteLogManager would around the shipped
verbs; without one, the store's manifests are the only record.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from ..errors import InvalidRangeError
from ..formats import kafka
from .epoch_state import ServedRange
from .layout import LOG_SUFFIX, segment_key
from .remote_log import list_partition
from .segment_copy import new_segment_metadata, remove_attempt
from .settings import DEFAULT_BUFFER_SIZE, DEFAULT_INDEX_ENTRY_BYTES
from .shipped_verbs import ShippedRemoteStorageManager
from .types import (
    LogSegmentData,
    RemoteLogIndexEntry,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
    TopicIdPartition,
)

__all__ = ["DEFAULT_BUFFER_SIZE", "DEFAULT_INDEX_ENTRY_BYTES", "RemoteStorageManager"]

_STATE = RemoteLogSegmentState
_DELETE = RemotePartitionDeleteState


class RemoteStorageManager(ShippedRemoteStorageManager):
    """Kafka log segments in a store: the shipped verbs, and the seed
    interface's. Thread-safe; see :class:`ShippedRemoteStorageManager` for
    construction, configuration and events."""

    def copy_log_segment(
        self, topic_id_partition: TopicIdPartition, segment: LogSegmentData, *, next_offset: int | None = None
    ) -> list[RemoteLogIndexEntry]:
        """Copy one rolled segment under a fresh segment id, recording its
        states, and return its index entries. Its end offset is
        ``next_offset - 1``, as Kafka's RemoteLogManager gives it: the next
        segment's base offset (the log end offset for the active segment;
        without it, one past the segment's last batch), or the last batch's
        offset if that is later. A retry overwrites: once the new copy is
        committed, older copies of the same segment are deleted. With a
        metadata manager it holds the partition's copier lease
        (:meth:`holding_partition`). Raises :class:`FormatError` for
        damaged files, :class:`StateError` for a segment without records,
        :class:`CopyCancelledError` when cancelled (nothing of the attempt
        remains then), and :class:`ConflictError` when another copier holds
        the partition (nothing is done then)."""
        with self.holding_partition(topic_id_partition):
            return self._copy_held(topic_id_partition, segment, next_offset)

    @contextmanager
    def holding_partition(self, topic_id_partition: TopicIdPartition) -> Iterator[None]:
        """Hold the partition's copier lease in the metadata manager (taken,
        or renewed, on entry; given back when the outermost hold ends), so
        no other copier works on it meanwhile; without a metadata manager,
        nothing. Raises :class:`ConflictError` naming the holder when
        another live copier holds it."""
        manager = self.metadata_manager
        with self._lock:
            self._holding[topic_id_partition] = self._holding.get(topic_id_partition, 0) + 1
        try:
            if manager is not None:
                manager.take_copy_lease(topic_id_partition, self._owner, self._now_ms())
            yield
        finally:
            with self._lock:
                self._holding[topic_id_partition] -= 1
                last = self._holding[topic_id_partition] == 0
            if last and manager is not None:
                manager.give_back_copy_lease(topic_id_partition, self._owner)

    def _copy_held(
        self, topic_id_partition: TopicIdPartition, segment: LogSegmentData, next_offset: int | None
    ) -> list[RemoteLogIndexEntry]:
        metadata = new_segment_metadata(
            topic_id_partition, segment, next_offset=next_offset, broker_id=self.broker_id,
            event_timestamp_ms=self._now_ms(), limit=self.max_decompressed_bytes,
        )  # fmt: skip
        if self.metadata_manager is not None:
            self.metadata_manager.add_remote_log_segment_metadata(metadata)
        try:
            self.copy_log_segment_data(metadata, segment)
        except BaseException:
            self._move(metadata.segment_id, _STATE.DELETE_SEGMENT_STARTED)
            self._move(metadata.segment_id, _STATE.DELETE_SEGMENT_FINISHED)
            raise
        self._move(metadata.segment_id, _STATE.COPY_SEGMENT_FINISHED)
        for older in self._copies_of(topic_id_partition, metadata.start_offset):
            if older.segment_id != metadata.segment_id:
                self.delete_log_segment(older)
        return list(self.manifest(metadata).index_entries)

    def cancel_copying_log_segment(self, topic_id_partition: TopicIdPartition) -> None:
        """Stop every copy of ``topic_id_partition`` in progress (they raise
        :class:`CopyCancelledError` after removing their objects); a no-op
        when none is."""
        with self._lock:
            for event in self._copying.get(topic_id_partition, ()):
                event.set()

    def served_ranges(self, topic_id_partition: TopicIdPartition) -> list[ServedRange]:
        """Every copied offset of the partition with the one committed
        segment serving it, in offset order, as Kafka's leader-epoch state
        decides where copies overlap (:mod:`.epoch_state`): from the
        metadata manager when there is one, else from the store's manifests."""
        if self.metadata_manager is not None:
            served = self.metadata_manager.served_ranges(topic_id_partition)
        else:
            listing = list_partition(self.driver, self.prefix, topic_id_partition, self.manifest_bytes)
            for manifest in listing.segments:
                self._manifests[manifest.metadata.segment_id] = manifest
            served = listing.served()
        self._served[topic_id_partition] = served
        return served

    def list_remote_segments(
        self, topic_id_partition: TopicIdPartition, min_base_offset: int = 0
    ) -> list[RemoteLogSegmentMetadata]:
        """The committed segments serving offsets (:meth:`served_ranges`;
        older overlapping copies are not listed), with a start offset of
        at least ``min_base_offset``, by start offset."""
        found: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata] = {}
        for served in self.served_ranges(topic_id_partition):
            found.setdefault(served.segment.segment_id, served.segment)
        return sorted((s for s in found.values() if s.start_offset >= min_base_offset), key=lambda s: s.start_offset)

    def get_remote_log_index_entries(self, segment: RemoteLogSegmentMetadata) -> list[RemoteLogIndexEntry]:
        """The index entries recorded when ``segment`` was copied, narrowed
        to the offsets it serves (an entry's ``first_offset`` and
        ``last_offset``; :meth:`read` keeps to them): where copies overlap,
        the entries of all segments give each offset once."""
        served = self._served.get(segment.topic_id_partition)
        if served is None:
            served = self.served_ranges(segment.topic_id_partition)
        spans = [r for r in served if r.segment.segment_id == segment.segment_id]
        entries = []
        for entry in self.manifest(segment).index_entries:
            for span in spans:
                first, last = max(entry.first_offset, span.first), min(entry.last_offset, span.last)
                if first <= last:
                    entries.append(replace(entry, first_offset=first, last_offset=last))
        return entries

    def read(self, index_entry: RemoteLogIndexEntry, max_bytes: int, start_offset: int, min_one_message: bool) -> bytes:
        """Whole batches of one index entry (one ranged GET) holding its
        offsets, from the first whose last offset is at least
        ``start_offset``, up to ``max_bytes``; the first batch even if
        larger when ``min_one_message``; never a partial batch. Raises
        :class:`FormatError` for damaged batches."""
        if max_bytes < 0:
            raise InvalidRangeError(f"max_bytes must be >= 0, got {max_bytes}")
        key = segment_key(self.prefix, index_entry.segment_id, index_entry.segment_start_offset, LOG_SUFFIX)
        data = self.driver.read(key, index_entry.position, index_entry.position + index_entry.length)
        out = bytearray()
        for batch in kafka.iter_batches(data, limit=self.max_decompressed_bytes):
            if batch.base_offset > index_entry.last_offset:
                break
            if batch.last_offset < max(start_offset, index_entry.first_offset):
                continue
            if len(out) + batch.size_in_bytes > max_bytes and not (min_one_message and not out):
                break
            out += data[batch.position : batch.position + batch.size_in_bytes]
        return bytes(out)

    def delete_log_segment(self, segment: RemoteLogSegmentMetadata) -> None:
        """Delete a segment, moving it through DELETE_SEGMENT_STARTED and
        _FINISHED; idempotent."""
        self._move(segment.segment_id, _STATE.DELETE_SEGMENT_STARTED)
        self.delete_log_segment_data(segment)
        self._move(segment.segment_id, _STATE.DELETE_SEGMENT_FINISHED)

    def delete_topic_partition(self, topic_id_partition: TopicIdPartition) -> None:
        """Delete every segment of the partition in any state, leftovers of
        failed copies and empty segments earlier versions tiered included
        (partition states MARKED -> STARTED -> FINISHED)."""
        manager = self.metadata_manager
        if manager is not None:
            manager.put_remote_partition_delete_state(topic_id_partition, _DELETE.DELETE_PARTITION_MARKED)
            manager.put_remote_partition_delete_state(topic_id_partition, _DELETE.DELETE_PARTITION_STARTED)
            for segment in manager.list_remote_log_segments(topic_id_partition):
                self.delete_log_segment(segment)
        listing = list_partition(self.driver, self.prefix, topic_id_partition)
        for manifest in listing.segments:
            self.delete_log_segment_data(manifest.metadata)
        for base, segment_id, _, _ in listing.uncommitted + listing.legacy_empty:
            # All remove_attempt needs of a segment is its id and base offset.
            stub_id = RemoteLogSegmentId(topic_id_partition, segment_id)
            stub = RemoteLogSegmentMetadata(stub_id, base, base, -1, 0, 0, 0, {0: base})
            remove_attempt(self.driver, self.prefix, stub)
        if manager is not None:
            manager.put_remote_partition_delete_state(topic_id_partition, _DELETE.DELETE_PARTITION_FINISHED)

    def cleanup_plan(
        self, topic_id_partition: TopicIdPartition, cleanup_until_ms: int
    ) -> tuple[list[RemoteLogSegmentMetadata], int]:
        """What :meth:`cleanup_log_until` would delete, deleting nothing:
        the unreferenced older copies whose newest record is older than
        ``cleanup_until_ms``, then the oldest segments whose newest record
        is older, stopping at the first that is not (a log is trimmed from
        its start); and the remote log start offset after it (the first
        offset still held, or one past the last segment deleted when none
        is left; 0 for a partition with no segments)."""
        segments = self.list_remote_segments(topic_id_partition)
        serving = {s.segment_id for s in segments}
        going = [c for c in self._committed(topic_id_partition)
                 if c.segment_id not in serving and c.max_timestamp_ms < cleanup_until_ms]  # fmt: skip
        start = segments[0].start_offset if segments else 0
        for segment in segments:
            if segment.max_timestamp_ms >= cleanup_until_ms:
                return going, segment.start_offset
            going.append(segment)
            start = segment.end_offset + 1
        return going, start

    def cleanup_log_until(self, topic_id_partition: TopicIdPartition, cleanup_until_ms: int) -> int:
        """Delete what :meth:`cleanup_plan` names, in its order; return the
        new remote log start offset."""
        going, start = self.cleanup_plan(topic_id_partition, cleanup_until_ms)
        for segment in going:
            self.delete_log_segment(segment)
        return start

    # -- helpers of the seed verbs -------------------------------------------

    def _committed(self, topic_id_partition: TopicIdPartition) -> list[RemoteLogSegmentMetadata]:
        """Every committed copy, those no offset is read from included."""
        if self.metadata_manager is not None:
            recorded = self.metadata_manager.list_remote_log_segments(topic_id_partition)
            return [s for s in recorded if s.state is _STATE.COPY_SEGMENT_FINISHED]
        return [m.metadata for m in list_partition(self.driver, self.prefix, topic_id_partition).segments]

    def _copies_of(self, topic_id_partition: TopicIdPartition, base: int) -> list[RemoteLogSegmentMetadata]:
        if self.metadata_manager is not None:
            recorded = self.metadata_manager.list_remote_log_segments(topic_id_partition)
            return [s for s in recorded if s.start_offset == base]
        listing = list_partition(self.driver, self.prefix, topic_id_partition)
        return [m.metadata for m in listing.segments if m.metadata.start_offset == base]
