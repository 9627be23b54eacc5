"""The RemoteStorageManager interface Kafka ships (``copyLogSegmentData``,
``fetchLogSegment``, ``fetchIndex``, ``deleteLogSegmentData``) over any
storage driver, with its configuration, events and the manifest and
offset-index caches every reader shares. The verbs KIP-405 was first
written with build on it in :mod:`.storage_manager`.
"""

from __future__ import annotations

import io
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, Any, Self

from ..errors import ConfigError, FormatError, InvalidRangeError, NoSuchIndexError, NotFoundError
from ..formats import kafka
from ..hooks import Event
from ..instrument import InstrumentedDriver
from ..offload.reading.read_ahead import ReadAheadPool
from ..storage import StorageDriver
from .epoch_state import ServedRange
from .index_check import decoded_offset_index
from .layout import LOG_SUFFIX, MANIFEST_SUFFIX, SegmentManifest, decode_manifest, segment_key
from .manifest_bytes import ManifestBytes
from .metadata_manager import RemoteLogMetadataManager
from .packed_manifest import PackedManifest
from .segment_copy import remove_attempt, upload_segment
from .segment_stream import RemoteSegmentStream
from .settings import DEFAULT_BUFFER_SIZE, DEFAULT_INDEX_ENTRY_BYTES, parse_settings, positive
from .types import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)

__all__ = ["ShippedRemoteStorageManager"]

_UNPACKED = 32  # listed manifests kept unpacked: the ones fetches asked for last


class ShippedRemoteStorageManager:
    """Kafka log segments in a store, through the verbs Kafka ships.
    Thread-safe; ``close`` releases the driver (if it opened it), the
    metadata manager and the read-ahead pool.

    With ``emit`` (``configure`` uses the plugin manager's, so metrics
    plugins see them), every store request is a ``storage.request`` event
    and every segment copied, failed, deleted or fetched (when its stream is
    closed) an ``rsm.segment`` event (``step``, ``topic_partition``, ``topic_id``,
    ``segment_id``, ``base_offset``, ``bytes``, ``seconds``).

    With ``manifest_bytes`` (a reader that lists the store again and
    again, as a ``kafka-remote`` ``readStream`` does), the listing of what
    serves each offset without a metadata manager reads only the manifests
    ``manifest_bytes`` does not hold yet (see :mod:`.manifest_bytes`)."""

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
        max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT,
        clock: Callable[[], float] = time.time,
        emit: Callable[[Event], None] | None = None,
        manifest_bytes: ManifestBytes | None = None,
    ) -> None:
        self._emit = emit
        self._driver = InstrumentedDriver(driver, emit) if driver is not None and emit is not None else driver
        self.prefix = prefix
        self.metadata_manager = metadata_manager
        self.broker_id = broker_id
        self.index_entry_bytes = positive("index.entry.bytes", index_entry_bytes)
        self.buffer_size = positive("fetch.buffer.bytes", buffer_size)
        self.read_ahead = read_ahead
        self.max_decompressed_bytes = positive("max.decompressed.bytes", max_decompressed_bytes)
        self._clock = clock
        self.manifest_bytes = manifest_bytes
        self._owned: list[Any] = []
        self._lock = threading.Lock()
        self._copying: dict[TopicIdPartition, set[threading.Event]] = {}
        # A listing's manifests are held packed (a partition may hold every segment), a copy's as it made them.
        self._manifests: dict[RemoteLogSegmentId, SegmentManifest | PackedManifest] = {}
        self._unpacked: OrderedDict[RemoteLogSegmentId, SegmentManifest] = OrderedDict()
        self._offset_indexes: dict[RemoteLogSegmentId, list[kafka.IndexEntry]] = {}
        self._served: dict[TopicIdPartition, list[ServedRange]] = {}
        self._owner = uuid.uuid4().hex  # this manager's copier leases
        self._holding: dict[TopicIdPartition, int] = {}

    # -- configuration -------------------------------------------------------

    def configure(self, configs: Mapping[str, Any]) -> None:
        """Set up from Kafka-style ``rsm.config.*`` settings (prefix
        stripped): ``storage.url`` (required), ``storage.option.<name>``,
        ``key.prefix``, ``metadata.path`` (SQLite file of the metadata
        manager), ``broker.id``, ``index.entry.bytes``, ``fetch.buffer.bytes``,
        ``read.ahead.bytes`` (turns read-ahead on; with
        ``read.ahead.bytes.per.reader`` and ``read.ahead.range.bytes``),
        ``max.decompressed.bytes`` (the cap on a compressed batch's records,
        which a magic 0/1 wrapper's header needs decompressed).
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
        self.max_decompressed_bytes = settings.max_decompressed_bytes
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

    def __enter__(self) -> Self:
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
            with self._copy_scope(metadata.topic_id_partition) as cancelled:
                manifest = upload_segment(self.driver, self.prefix, metadata, data, buffer_size=self.buffer_size,
                                          index_entry_bytes=self.index_entry_bytes, cancelled=cancelled,
                                          limit=self.max_decompressed_bytes)  # fmt: skip
        except Exception as exc:
            self._event("copy_failed", metadata, started, error=f"{type(exc).__name__}: {exc}")
            raise
        self._manifests[metadata.segment_id] = manifest
        self._event("copied", metadata, started, bytes=sum(manifest.object_sizes.values()))
        return None

    def _event(self, step: str, metadata: RemoteLogSegmentMetadata, started: float, **fields: Any) -> None:
        if self._emit is not None:
            self._emit(Event("rsm.segment", {"step": step, "topic_partition": str(metadata.topic_partition),
                                             "topic_id": metadata.topic_id_partition.topic_id,
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
        copied (or is deleted), :class:`NoSuchIndexError` for a TRANSACTION
        index of a segment that had none (Kafka writes ``.txnindex`` only
        for aborted transactions), and
        :class:`FormatError` naming the object if it is not the size the
        segment's manifest recorded (cut, grown or replaced) or, for a
        TRANSACTION index, if the manifest recorded one that is gone: a
        reader takes NotFoundError for "no aborted transactions", and would
        return aborted records as committed."""
        manifest = self.manifest(metadata)
        key = segment_key(self.prefix, metadata.segment_id, metadata.start_offset, index_type.suffix)
        if index_type.suffix not in manifest.object_sizes:
            raise NoSuchIndexError(f"segment {metadata.segment_id.id} of {metadata.topic_id_partition} has no "
                                   f"{index_type.name} index (it had no aborted transactions)", key=key)  # fmt: skip
        size = manifest.object_sizes[index_type.suffix]
        try:
            data = self.driver.read(key) if size else b""
        except NotFoundError:
            if index_type is not IndexType.TRANSACTION:
                raise
            raise FormatError(f"{key} is gone but its segment's manifest recorded {size} bytes: without it "
                              "read_committed cannot tell the segment's aborted records from committed ones; "
                              "copy the segment again (or, if it was deleted since it was listed, read again)"
                              ) from None  # fmt: skip
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

    # -- helpers -------------------------------------------------------------

    def manifest(self, metadata: RemoteLogSegmentMetadata) -> SegmentManifest:
        """The committed manifest of a segment (cached). Raises
        :class:`NotFoundError` if it was never copied or is deleted."""
        cached = self._manifests.get(metadata.segment_id)
        if isinstance(cached, PackedManifest):
            return self._unpacked_manifest(metadata.segment_id, cached)
        if cached is not None:
            return cached
        key = segment_key(self.prefix, metadata.segment_id, metadata.start_offset, MANIFEST_SUFFIX)
        try:
            raw = self.driver.read(key)
        except NotFoundError:
            raise NotFoundError(f"segment {metadata.segment_id.id} (base {metadata.start_offset}) of "
                                f"{metadata.topic_id_partition} is not in the store: never copied, "
                                "or deleted", key=key) from None  # fmt: skip
        manifest = decode_manifest(raw, key=key)
        self._manifests[metadata.segment_id] = manifest
        return manifest

    def log_size(self, metadata: RemoteLogSegmentMetadata) -> int:
        """The size of the segment's ``.log``, from its manifest (see
        :meth:`manifest` for what is raised)."""
        return self.manifest(metadata).object_sizes[LOG_SUFFIX]

    def index_key(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> str:
        """The key of the segment's index object of ``index_type``."""
        return segment_key(self.prefix, metadata.segment_id, metadata.start_offset, index_type.suffix)

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

    def _unpacked_manifest(self, segment_id: RemoteLogSegmentId, packed: PackedManifest) -> SegmentManifest:
        """``packed`` unpacked, kept among the last :data:`_UNPACKED` asked
        for: a listing packs every manifest it holds (a partition may hold
        every segment), and fetches ask for the same few again and again."""
        with self._lock:
            held = self._unpacked.get(segment_id)
            if held is not None:
                self._unpacked.move_to_end(segment_id)
                return held
        manifest = packed.unpacked()
        with self._lock:
            if self._manifests.get(segment_id) is not None:  # not deleted meanwhile
                self._unpacked[segment_id] = manifest
                while len(self._unpacked) > _UNPACKED:
                    self._unpacked.popitem(last=False)
        return manifest

    def _forget(self, segment_id: RemoteLogSegmentId) -> None:
        self._manifests.pop(segment_id, None)
        with self._lock:
            self._unpacked.pop(segment_id, None)
        self._offset_indexes.pop(segment_id, None)

    def _move(self, segment_id: RemoteLogSegmentId, state: RemoteLogSegmentState) -> None:
        manager = self.metadata_manager
        if manager is not None and manager.segment(segment_id) is not None:
            manager.update_remote_log_segment_state(segment_id, state, event_timestamp_ms=self._now_ms(),
                                                    broker_id=self.broker_id)  # fmt: skip

    @contextmanager
    def _copy_scope(self, topic_partition: TopicIdPartition) -> Iterator[Callable[[], bool]]:
        event = threading.Event()
        with self._lock:
            self._copying.setdefault(topic_partition, set()).add(event)
        try:
            yield event.is_set
        finally:
            with self._lock:
                self._copying[topic_partition].discard(event)
