"""KIP-405's RemoteStorageManager over any storage driver: the interface
the KIP was first written with (copy, list, index entries, read by entry,
cleanup) and the one Kafka ships (``copyLogSegmentData``,
``fetchLogSegment``, ``fetchIndex``, ``deleteLogSegmentData``).

With a :class:`RemoteLogMetadataManager` it also records every copy
attempt's state, as Kafka's RemoteLogManager would around the shipped
verbs; without one, the store's manifests are the only record.
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any

from ..errors import ConfigError, FormatError, InvalidRangeError, NotFoundError, StateError
from ..formats import kafka
from ..hooks import Event
from ..instrument import InstrumentedDriver
from ..offload.reading.read_ahead import ReadAheadPool
from ..storage import StorageDriver
from .index_check import decoded_offset_index
from .layout import LOG_SUFFIX, MANIFEST_SUFFIX, SegmentManifest, decode_manifest, segment_key
from .metadata_manager import RemoteLogMetadataManager
from .remote_log import list_partition
from .segment_copy import remove_attempt, scan_log_file, upload_segment
from .segment_stream import RemoteSegmentStream
from .settings import DEFAULT_BUFFER_SIZE, DEFAULT_INDEX_ENTRY_BYTES, parse_settings, positive
from .types import (
    IndexType,
    LogSegmentData,
    RemoteLogIndexEntry,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
    TopicPartition,
)

__all__ = ["DEFAULT_BUFFER_SIZE", "DEFAULT_INDEX_ENTRY_BYTES", "RemoteStorageManager"]

_STATE = RemoteLogSegmentState
_DELETE = RemotePartitionDeleteState


class RemoteStorageManager:
    """Kafka log segments in a store. Thread-safe; ``close`` releases the
    driver (if it opened it), the metadata manager and the read-ahead pool.

    With ``emit`` (``configure`` uses the plugin manager's, so metrics
    plugins see them), every store request is a ``storage.request`` event
    and every segment copied, failed, deleted or fetched (when its stream is
    closed) an ``rsm.segment`` event (``step``, ``topic_partition``,
    ``segment_id``, ``base_offset``, ``bytes``, ``seconds``)."""

    def __init__(
        self,
        driver: StorageDriver | None = None,
        *,
        prefix: str = "",
        metadata_manager: RemoteLogMetadataManager | None = None,
        broker_id: int = 0,
        index_entry_bytes: int = DEFAULT_INDEX_ENTRY_BYTES,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        read_ahead: ReadAheadPool | None = None,
        clock: Callable[[], float] = time.time,
        emit: Callable[[Event], None] | None = None,
    ) -> None:
        self._emit = emit
        self._driver = InstrumentedDriver(driver, emit) if driver is not None and emit is not None else driver
        self.prefix = prefix
        self.metadata_manager = metadata_manager
        self.broker_id = broker_id
        self.index_entry_bytes = positive("index.entry.bytes", index_entry_bytes)
        self.buffer_size = positive("fetch.buffer.bytes", buffer_size)
        self.read_ahead = read_ahead
        self._clock = clock
        self._owned: list[Any] = []
        self._lock = threading.Lock()
        self._copying: dict[TopicPartition, set[threading.Event]] = {}
        self._manifests: dict[RemoteLogSegmentId, SegmentManifest] = {}
        self._offset_indexes: dict[RemoteLogSegmentId, list[kafka.IndexEntry]] = {}

    # -- configuration -------------------------------------------------------

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Set up from Kafka-style ``rsm.config.*`` settings (prefix
        stripped): ``storage.url`` (required), ``storage.option.<name>``,
        ``key.prefix``, ``metadata.path`` (SQLite file of the metadata
        manager), ``broker.id``, ``index.entry.bytes``, ``fetch.buffer.bytes``,
        ``read.ahead.bytes`` (turns read-ahead on; with
        ``read.ahead.bytes.per.reader`` and ``read.ahead.range.bytes``).
        Raises :class:`ConfigError` naming an unknown or invalid key."""
        from ..plugins import default_plugin_manager

        settings = parse_settings(configs)
        manager = default_plugin_manager()
        self._emit = manager.emit
        opened = manager.open_driver(settings.url, **settings.driver_options)
        self._owned.append(opened)
        self._driver = InstrumentedDriver(opened, self._emit)
        self.prefix = settings.prefix
        self.broker_id = settings.broker_id
        self.index_entry_bytes = settings.index_entry_bytes
        self.buffer_size = settings.buffer_size
        if settings.metadata_path is not None:
            self.metadata_manager = RemoteLogMetadataManager(settings.metadata_path)
            self._owned.append(self.metadata_manager)
        if settings.read_ahead is not None:
            total, per_reader, range_bytes = settings.read_ahead
            self.read_ahead = ReadAheadPool(total_bytes=total, reader_bytes=per_reader, range_size=range_bytes,
                                            emit=self._emit)  # fmt: skip
            self._owned.append(self.read_ahead)

    @property
    def driver(self) -> StorageDriver:
        if self._driver is None:
            raise ConfigError("RemoteStorageManager has no store: pass a driver or call configure() first")
        return self._driver

    def close(self) -> None:
        for owned in reversed(self._owned):
            owned.close()
        self._owned.clear()

    def __enter__(self) -> RemoteStorageManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- the shipped interface ----------------------------------------------

    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> bytes | None:
        """Upload a segment's files as ``metadata`` (from the caller's
        metadata manager) describes; no custom metadata is returned. Raises
        as :func:`upload_segment` does; nothing of the attempt remains then."""
        started = time.perf_counter()
        try:
            with self._copy_scope(metadata.topic_partition) as cancelled:
                manifest = upload_segment(self.driver, self.prefix, metadata, data, buffer_size=self.buffer_size,
                                          index_entry_bytes=self.index_entry_bytes, cancelled=cancelled)  # fmt: skip
        except Exception as exc:
            self._event("copy_failed", metadata, started, error=f"{type(exc).__name__}: {exc}")
            raise
        self._manifests[metadata.segment_id] = manifest
        self._event("copied", metadata, started, bytes=sum(manifest.object_sizes.values()))
        return None

    def _event(self, step: str, metadata: RemoteLogSegmentMetadata, started: float, **fields: Any) -> None:
        if self._emit is not None:
            self._emit(Event("rsm.segment", {"step": step, "topic_partition": str(metadata.topic_partition),
                                             "segment_id": metadata.segment_id.id, "base_offset": metadata.start_offset,
                                             "seconds": time.perf_counter() - started, **fields}))  # fmt: skip

    def fetch_log_segment(self, metadata: RemoteLogSegmentMetadata, start: int, end: int | None = None) -> IO[bytes]:
        """A lazy stream of the remote ``.log`` from byte ``start`` to the
        smaller of ``end`` *inclusive* and the segment's end (Kafka's
        contract: an ``end`` past the segment is clamped). Raises
        :class:`InvalidRangeError` for ``start < 0``, ``end < start``, or a
        ``start`` past the segment, and :class:`NotFoundError` for a segment
        that was never copied (or is deleted)."""
        size = self.manifest(metadata).object_sizes[LOG_SUFFIX]
        key = segment_key(self.prefix, metadata.segment_id, metadata.start_offset, LOG_SUFFIX)
        if start < 0 or (end is not None and end < start):
            raise InvalidRangeError(f"{key}: cannot fetch bytes {start}..{end} (start >= 0 and end >= start)")
        if start > size or (start == size and size > 0):
            raise InvalidRangeError(f"{key}: start position {start} is past its {size} bytes")
        stop = size if end is None else min(end + 1, size)
        started = time.perf_counter()

        def fetched(served: int) -> None:
            self._event("fetched", metadata, started, bytes=served)

        raw = RemoteSegmentStream(self.driver, key, start, stop, buffer_size=self.buffer_size, pool=self.read_ahead,
                                  on_close=fetched)  # fmt: skip
        return io.BufferedReader(raw, buffer_size=64 * 1024)

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> IO[bytes]:
        """The remote index of ``index_type``, byte-identical to what was
        copied. Raises :class:`NotFoundError` for a segment that was never
        copied, and for a TRANSACTION index of a segment that had none
        (Kafka writes ``.txnindex`` only for aborted transactions), and
        :class:`FormatError` naming the object if it is not the size the
        segment's manifest recorded (cut, grown or replaced)."""
        manifest = self.manifest(metadata)
        key = segment_key(self.prefix, metadata.segment_id, metadata.start_offset, index_type.suffix)
        if index_type.suffix not in manifest.object_sizes:
            raise NotFoundError(f"segment {metadata.segment_id.id} of {metadata.topic_partition} has no "
                                f"{index_type.name} index (it had no aborted transactions)", key=key)  # fmt: skip
        size = manifest.object_sizes[index_type.suffix]
        data = self.driver.read(key) if size else b""
        if len(data) != size:
            raise FormatError(f"{key} holds {len(data)} bytes but its segment's manifest recorded {size}: "
                              "the index was altered or damaged; copy the segment again")  # fmt: skip
        return io.BytesIO(data)

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Delete every object of the segment, manifest first; deleting a
        segment that is already gone is not an error."""
        started = time.perf_counter()
        remove_attempt(self.driver, self.prefix, metadata)
        self._forget(metadata.segment_id)
        self._event("deleted", metadata, started)

    # -- the seed interface --------------------------------------------------

    def copy_log_segment(self, topic_partition: TopicPartition, segment: LogSegmentData) -> list[RemoteLogIndexEntry]:
        """Copy one rolled segment under a fresh segment id, recording its
        states, and return its index entries. A retry overwrites: once the
        new copy is committed, older copies of the same segment are deleted.
        Raises :class:`FormatError` for damaged files, :class:`StateError`
        for a segment without records, and :class:`CopyCancelledError` when
        cancelled; nothing of the attempt remains then."""
        name = segment.log_segment.name
        if len(name) != 24 or not name[:20].isdigit() or not name.endswith(".log"):
            raise ConfigError(f"{segment.log_segment} is not a Kafka segment file (<20-digit base offset>.log)")
        base = int(name[:20])
        summary = scan_log_file(segment.log_segment, base)
        if summary.batch_count == 0:
            raise StateError(f"{segment.log_segment} holds no records: an empty segment has nothing to tier")
        # Batches older than KIP-101 (magic 0/1, or epoch -1) carry no leader
        # epoch: then the segment's epochs are the checkpoint's, as Kafka's
        # RemoteLogManager takes them from its leader-epoch cache.
        epochs = summary.leader_epochs or dict(
            kafka.epochs_in_range(kafka.decode_leader_epochs(segment.leader_epoch_index), base, summary.last_offset + 1)
        )
        metadata = RemoteLogSegmentMetadata(
            RemoteLogSegmentId.generate(topic_partition), start_offset=base, end_offset=summary.last_offset,
            max_timestamp_ms=summary.max_timestamp, broker_id=self.broker_id, event_timestamp_ms=self._now_ms(),
            segment_size_in_bytes=os.path.getsize(segment.log_segment), segment_leader_epochs=epochs,
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
        for older in self._copies_of(topic_partition, base):
            if older.segment_id != metadata.segment_id:
                self.delete_log_segment(older)
        return list(self._manifests[metadata.segment_id].index_entries)

    def cancel_copying_log_segment(self, topic_partition: TopicPartition) -> None:
        """Stop every copy of ``topic_partition`` in progress (they raise
        :class:`CopyCancelledError` after removing their objects); a no-op
        when none is."""
        with self._lock:
            for event in self._copying.get(topic_partition, ()):
                event.set()

    def list_remote_segments(
        self, topic_partition: TopicPartition, min_base_offset: int = 0
    ) -> list[RemoteLogSegmentMetadata]:
        """Committed segments with a start offset of at least
        ``min_base_offset``, by start offset: from the metadata manager when
        there is one, else from the store's manifests."""
        if self.metadata_manager is not None:
            found = [s for s in self.metadata_manager.list_remote_log_segments(topic_partition)
                     if s.state is _STATE.COPY_SEGMENT_FINISHED]  # fmt: skip
        else:
            manifests = list_partition(self.driver, self.prefix, topic_partition).segments
            for manifest in manifests:
                self._manifests[manifest.metadata.segment_id] = manifest
            found = [m.metadata for m in manifests]
        return [s for s in found if s.start_offset >= min_base_offset]

    def get_remote_log_index_entries(self, segment: RemoteLogSegmentMetadata) -> list[RemoteLogIndexEntry]:
        """The index entries recorded when ``segment`` was copied."""
        return list(self.manifest(segment).index_entries)

    def read(self, index_entry: RemoteLogIndexEntry, max_bytes: int, start_offset: int, min_one_message: bool) -> bytes:
        """Whole batches of one index entry (one ranged GET), from the first
        whose last offset is at least ``start_offset``, up to ``max_bytes``;
        the first batch even if larger when ``min_one_message``; never a
        partial batch. Raises :class:`FormatError` for damaged batches."""
        if max_bytes < 0:
            raise InvalidRangeError(f"max_bytes must be >= 0, got {max_bytes}")
        key = segment_key(self.prefix, index_entry.segment_id, index_entry.segment_start_offset, LOG_SUFFIX)
        data = self.driver.read(key, index_entry.position, index_entry.position + index_entry.length)
        out = bytearray()
        for batch in kafka.iter_batches(data):
            if batch.last_offset < start_offset:
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

    def delete_topic_partition(self, topic_partition: TopicPartition) -> None:
        """Delete every segment of the partition in any state, leftovers of
        failed copies included (partition states MARKED -> STARTED -> FINISHED)."""
        manager = self.metadata_manager
        if manager is not None:
            manager.put_remote_partition_delete_state(topic_partition, _DELETE.DELETE_PARTITION_MARKED)
            manager.put_remote_partition_delete_state(topic_partition, _DELETE.DELETE_PARTITION_STARTED)
            for segment in manager.list_remote_log_segments(topic_partition):
                self.delete_log_segment(segment)
        listing = list_partition(self.driver, self.prefix, topic_partition)
        for manifest in listing.segments:
            self.delete_log_segment_data(manifest.metadata)
        for base, segment_id, _, _ in listing.uncommitted:
            # All remove_attempt needs of a segment is its id and base offset.
            stub_id = RemoteLogSegmentId(topic_partition, segment_id)
            stub = RemoteLogSegmentMetadata(stub_id, base, base, -1, 0, 0, 0, {0: base})
            remove_attempt(self.driver, self.prefix, stub)
        if manager is not None:
            manager.put_remote_partition_delete_state(topic_partition, _DELETE.DELETE_PARTITION_FINISHED)

    def cleanup_log_until(self, topic_partition: TopicPartition, cleanup_until_ms: int) -> int:
        """Delete the oldest segments whose newest record is older than
        ``cleanup_until_ms``, stopping at the first that is not (a log is
        trimmed from its start). Returns the new remote log start offset:
        the first offset still held, or one past the last deleted segment
        when none is left (0 for a partition with no segments)."""
        segments = self.list_remote_segments(topic_partition)
        start = segments[0].start_offset if segments else 0
        for segment in segments:
            if segment.max_timestamp_ms >= cleanup_until_ms:
                return segment.start_offset
            self.delete_log_segment(segment)
            start = segment.end_offset + 1
        return start

    # -- helpers -------------------------------------------------------------

    def manifest(self, metadata: RemoteLogSegmentMetadata) -> SegmentManifest:
        """The committed manifest of a segment (cached). Raises
        :class:`NotFoundError` if it was never copied or is deleted."""
        cached = self._manifests.get(metadata.segment_id)
        if cached is not None:
            return cached
        key = segment_key(self.prefix, metadata.segment_id, metadata.start_offset, MANIFEST_SUFFIX)
        try:
            raw = self.driver.read(key)
        except NotFoundError:
            raise NotFoundError(f"segment {metadata.segment_id.id} (base {metadata.start_offset}) of "
                                f"{metadata.topic_partition} is not in the store: never copied, "
                                "or deleted", key=key) from None  # fmt: skip
        manifest = decode_manifest(raw, key=key)
        self._manifests[metadata.segment_id] = manifest
        return manifest

    def offset_index(self, metadata: RemoteLogSegmentMetadata) -> list[kafka.IndexEntry]:
        """The segment's offset index, fetched once, checked and cached.
        Raises :class:`FormatError` naming the object for one of another
        size, that does not decode, or with an entry outside the segment."""
        cached = self._offset_indexes.get(metadata.segment_id)
        if cached is None:
            key = segment_key(self.prefix, metadata.segment_id, metadata.start_offset, IndexType.OFFSET.suffix)
            raw = self.fetch_index(metadata, IndexType.OFFSET).read()
            cached = decoded_offset_index(raw, metadata, self.manifest(metadata).object_sizes[LOG_SUFFIX], key)
            self._offset_indexes[metadata.segment_id] = cached
        return cached

    def _forget(self, segment_id: RemoteLogSegmentId) -> None:
        self._manifests.pop(segment_id, None)
        self._offset_indexes.pop(segment_id, None)

    def _copies_of(self, topic_partition: TopicPartition, base: int) -> list[RemoteLogSegmentMetadata]:
        if self.metadata_manager is not None:
            recorded = self.metadata_manager.list_remote_log_segments(topic_partition)
            return [s for s in recorded if s.start_offset == base]
        listing = list_partition(self.driver, self.prefix, topic_partition)
        return [m.metadata for m in listing.segments if m.metadata.start_offset == base]

    def _move(self, segment_id: RemoteLogSegmentId, state: RemoteLogSegmentState) -> None:
        manager = self.metadata_manager
        if manager is not None and manager.segment(segment_id) is not None:
            manager.update_remote_log_segment_state(segment_id, state, event_timestamp_ms=self._now_ms(),
                                                    broker_id=self.broker_id)  # fmt: skip

    @contextmanager
    def _copy_scope(self, topic_partition: TopicPartition) -> Iterator[Callable[[], bool]]:
        event = threading.Event()
        with self._lock:
            self._copying.setdefault(topic_partition, set()).add(event)
        try:
            yield event.is_set
        finally:
            with self._lock:
                self._copying[topic_partition].discard(event)
