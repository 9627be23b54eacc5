"""What reading a remote Kafka log needs of the store its segments are in,
whatever layout wrote them: our own (:class:`~.storage_manager.RemoteStorageManager`)
or Aiven's plugin's (:class:`~.aiven.storage.AivenRemoteStorage`)."""

from __future__ import annotations

from typing import IO, Protocol

from ..formats import kafka
from ..offload.reading.read_ahead import ReadAheadPool
from .epoch_state import ServedRange
from .types import IndexType, RemoteLogSegmentMetadata, TopicIdPartition

__all__ = ["IndexedSegments", "SegmentSource"]


class IndexedSegments(Protocol):
    """What checking a segment's indexes needs."""

    def log_size(self, metadata: RemoteLogSegmentMetadata) -> int:
        """The size of the segment's ``.log`` as Kafka wrote it."""
        ...

    def index_key(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> str:
        """The object holding the index, to name it in errors."""
        ...

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> IO[bytes]: ...

    def fetch_log_segment(
        self, metadata: RemoteLogSegmentMetadata, start: int, end: int | None = None
    ) -> IO[bytes]: ...


class SegmentSource(IndexedSegments, Protocol):
    """What :class:`~.log_reader.RemoteLogReader` needs."""

    read_ahead: ReadAheadPool | None

    def served_ranges(self, topic_id_partition: TopicIdPartition) -> list[ServedRange]: ...

    def offset_index(self, metadata: RemoteLogSegmentMetadata) -> list[kafka.IndexEntry]: ...
