"""Kafka tiered storage (KIP-405): a RemoteStorageManager and a
RemoteLogMetadataManager over offload-core's storage drivers."""

from .metadata_manager import RemoteLogMetadataManager
from .partition_dir import LocalSegment, read_partition_dir
from .remote_log import PartitionListing, list_partition, list_partitions
from .storage_manager import RemoteStorageManager
from .types import (
    IndexType,
    LogSegmentData,
    RemoteLogIndexEntry,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
    TopicIdPartition,
    TopicPartition,
)

__all__ = [
    "IndexType",
    "LocalSegment",
    "LogSegmentData",
    "PartitionListing",
    "RemoteLogIndexEntry",
    "RemoteLogMetadataManager",
    "RemoteLogSegmentId",
    "RemoteLogSegmentMetadata",
    "RemoteLogSegmentState",
    "RemotePartitionDeleteState",
    "RemoteStorageManager",
    "TopicIdPartition",
    "TopicPartition",
    "list_partition",
    "list_partitions",
    "read_partition_dir",
]
