"""The segments Aiven's plugin tiered to a store, served as our own
layout's are (a :class:`~..segment_source.SegmentSource`), so
:class:`~..log_reader.RemoteLogReader`, the index checks, the CLI and
Spark read both alike. No metadata manager: the store is listed once
(:func:`.listing.list_store`)."""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Mapping
from typing import IO, Self

from ...errors import ConfigError, FormatError, InvalidRangeError, NoSuchIndexError, NotFoundError
from ...formats import kafka
from ...offload.reading.read_ahead import ReadAheadPool
from ...storage import StorageDriver
from ..epoch_state import ServedRange
from ..index_check import decoded_offset_index
from ..manifest_bytes import ManifestBytes
from ..settings import DEFAULT_BUFFER_SIZE
from ..types import IndexType, RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition, TopicPartition
from .listing import AivenListing, AivenSegment, list_store
from .log_stream import AivenLogStream
from .manifest import IndexKind
from .segment_reader import DEFAULT_DECODED_CACHE_BYTES, AivenSegmentReader

__all__ = ["AivenRemoteStorage"]

_KINDS = {IndexType.OFFSET: IndexKind.OFFSET, IndexType.TIMESTAMP: IndexKind.TIMESTAMP,
          IndexType.PRODUCER_SNAPSHOT: IndexKind.PRODUCER_SNAPSHOT, IndexType.LEADER_EPOCH: IndexKind.LEADER_EPOCH,
          IndexType.TRANSACTION: IndexKind.TRANSACTION}  # fmt: skip


class AivenRemoteStorage:
    """The plugin's segments under ``prefix`` (its ``key.prefix``,
    verbatim) in ``driver``; ``private_keys`` (key-pair id -> private key
    PEM) decrypt encrypted ones. ``read_ahead`` and ``manifest_bytes``:
    as for our layout. ``wanted`` (a topic and a partition: true to see it)
    narrows what it sees to those partitions, whose manifests alone are
    read. Not for concurrent use from several threads."""

    def __init__(
        self,
        driver: StorageDriver,
        *,
        prefix: str = "",
        private_keys: Mapping[str, bytes] | None = None,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        read_ahead: ReadAheadPool | None = None,
        cache_bytes: int = DEFAULT_DECODED_CACHE_BYTES,
        manifest_bytes: ManifestBytes | None = None,
        wanted: Callable[[str, int], bool] | None = None,
    ) -> None:
        self.driver = driver
        self.manifest_bytes = manifest_bytes
        self.wanted = wanted
        self.prefix = prefix
        self.read_ahead = read_ahead
        self._private_keys = dict(private_keys or {})
        self._buffer_size = buffer_size
        self._cache_bytes = cache_bytes
        self._readers: dict[RemoteLogSegmentId, AivenSegmentReader] = {}
        self._offset_indexes: dict[RemoteLogSegmentId, list[kafka.IndexEntry]] = {}

    def close(self) -> None:
        self._readers.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @functools.cached_property
    def listing(self) -> AivenListing:
        """The store's segments and leftovers, listed on first use."""
        return list_store(self.driver, self.prefix, self.manifest_bytes, self.wanted)

    def resolve(self, topic_partition: TopicPartition, topic_id: str | None, *, option: str) -> TopicIdPartition:
        """The partition ``topic_partition`` (of ``topic_id``, if given)
        names in the store. :class:`ConfigError` naming the topic ids when
        there are several and ``topic_id`` is None (a topic deleted and
        recreated), and :class:`NotFoundError` when it has no objects."""
        ids = self.listing.topic_ids(topic_partition)
        if topic_id is not None:
            if topic_id not in ids:
                raise NotFoundError(f"{topic_partition} has no objects of topic id {topic_id} under prefix "
                                    f"{self.prefix!r}; it has {', '.join(ids) or 'none'}")  # fmt: skip
            return TopicIdPartition(topic_id, topic_partition)
        if len(ids) > 1:
            raise ConfigError(f"{topic_partition} has {len(ids)} topic ids in the store ({', '.join(ids)}): the topic "
                              f"was deleted and recreated; pick one with {option}")  # fmt: skip
        if not ids:
            raise NotFoundError(f"no Aiven tiered-storage objects of {topic_partition} under prefix {self.prefix!r}: "
                                "check the store and rsm.config.key.prefix")  # fmt: skip
        return TopicIdPartition(ids[0], topic_partition)

    def served_ranges(self, topic_id_partition: TopicIdPartition) -> list[ServedRange]:
        return self.listing.served(topic_id_partition)

    def list_remote_segments(self, topic_id_partition: TopicIdPartition) -> list[RemoteLogSegmentMetadata]:
        """The segments serving offsets, by start offset."""
        found: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata] = {}
        for served in self.served_ranges(topic_id_partition):
            found.setdefault(served.segment.segment_id, served.segment)
        return sorted(found.values(), key=lambda s: s.start_offset)

    def segment(self, metadata: RemoteLogSegmentMetadata) -> AivenSegment:
        """The listed segment of ``metadata``; :class:`NotFoundError` if none."""
        for segment in self.listing.segments.get(metadata.topic_id_partition, []):
            if segment.metadata.segment_id == metadata.segment_id:
                return segment
        raise NotFoundError(f"segment {metadata.segment_id.id} of {metadata.topic_id_partition} is not in the store")

    def reader(self, metadata: RemoteLogSegmentMetadata) -> AivenSegmentReader:
        """The segment's reader (its data key unwrapped once); raises as
        :class:`AivenSegmentReader` does."""
        reader = self._readers.get(metadata.segment_id)
        if reader is None:
            segment = self.segment(metadata)
            reader = AivenSegmentReader(self.driver.read, segment.key, segment.manifest_bytes, self._private_keys,
                                        cache_bytes=self._cache_bytes)  # fmt: skip
            self._readers[metadata.segment_id] = reader
        return reader

    def log_size(self, metadata: RemoteLogSegmentMetadata) -> int:
        return self.segment(metadata).manifest.chunk_index.original_file_size

    def index_key(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> str:
        return self.segment(metadata).key.with_suffix("indexes").key

    def fetch_log_segment(self, metadata: RemoteLogSegmentMetadata, start: int, end: int | None = None) -> IO[bytes]:
        """As our layout's: a lazy stream of the original ``.log`` from
        ``start`` to ``end`` inclusive (clamped to the segment). Raises
        :class:`InvalidRangeError` for a range outside the segment."""
        reader = self.reader(metadata)
        size = reader.size
        if start < 0 or (end is not None and end < start) or start > size or (start == size and size > 0):
            raise InvalidRangeError(f"{reader.log_key}: cannot fetch bytes {start}..{end} of its {size}")
        stop = size if end is None else min(end + 1, size)
        raw = AivenLogStream(reader, self.driver, start, stop, buffer_size=self._buffer_size, pool=self.read_ahead)
        return io.BufferedReader(raw, buffer_size=64 * 1024)

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> IO[bytes]:
        """The index Kafka wrote. :class:`NoSuchIndexError` for a transaction
        index the segment has none of, :class:`NotFoundError` for a segment
        gone; :class:`FormatError` naming
        ``.indexes`` for one that does not decrypt or is cut, or, for a
        transaction index the manifest records, if ``.indexes`` is gone: a
        reader takes NotFoundError for "no aborted transactions", and would
        return aborted records as committed."""
        reader = self.reader(metadata)
        try:
            data = reader.read_index(_KINDS[index_type])
        except NotFoundError:
            if index_type is not IndexType.TRANSACTION:
                raise
            raise FormatError(f"{reader.indexes_key} is gone but its segment's manifest records a transaction "
                              "index in it: without it read_committed cannot tell the segment's aborted records "
                              "from committed ones; copy the segment again (or, if it was deleted since it was "
                              "listed, read again)") from None  # fmt: skip
        if data is None:
            raise NoSuchIndexError(f"segment {metadata.segment_id.id} of {metadata.topic_id_partition} has no "
                                   f"{index_type.name} index (it had no aborted transactions)")  # fmt: skip
        return io.BytesIO(data)

    def offset_index(self, metadata: RemoteLogSegmentMetadata) -> list[kafka.IndexEntry]:
        """The segment's offset index, checked and kept (see
        :func:`~..index_check.decoded_offset_index`)."""
        cached = self._offset_indexes.get(metadata.segment_id)
        if cached is None:
            raw = self.fetch_index(metadata, IndexType.OFFSET).read()
            key = self.index_key(metadata, IndexType.OFFSET)
            cached = decoded_offset_index(raw, metadata, self.log_size(metadata), key)
            self._offset_indexes[metadata.segment_id] = cached
        return cached

    def cleanup_plan(
        self, topic_id_partition: TopicIdPartition, cleanup_until_ms: int
    ) -> tuple[list[RemoteLogSegmentMetadata], int]:
        """As our layout's: the unreferenced copies older than
        ``cleanup_until_ms``, then the oldest serving segments older, and the
        log start offset after them."""
        segments = self.list_remote_segments(topic_id_partition)
        serving = {s.segment_id for s in segments}
        copies = [s.metadata for s in self.listing.segments.get(topic_id_partition, [])]
        going = [c for c in copies if c.segment_id not in serving and c.max_timestamp_ms < cleanup_until_ms]
        start = segments[0].start_offset if segments else 0
        for segment in segments:
            if segment.max_timestamp_ms >= cleanup_until_ms:
                return going, segment.start_offset
            going.append(segment)
            start = segment.end_offset + 1
        return going, start

    def delete_log_segment(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Delete the segment's objects, manifest first (so a delete cut
        short lists as a leftover, never as a segment); idempotent."""
        key = self.segment(metadata).key
        self.driver.delete([key.with_suffix("rsm-manifest").key])
        self.driver.delete([key.with_suffix("log").key, key.with_suffix("indexes").key])
        self._readers.pop(metadata.segment_id, None)
        self._offset_indexes.pop(metadata.segment_id, None)
