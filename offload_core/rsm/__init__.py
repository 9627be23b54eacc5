"""Kafka tiered storage (KIP-405): a RemoteStorageManager and a
RemoteLogMetadataManager over offload-core's storage drivers.

The re-exports below load on first use (PEP 562 ``__getattr__``), as
:mod:`offload_core`'s do: importing one submodule (the types, say) loads
neither the metadata manager nor the storage manager behind it, so the
``offload kafka`` verbs start without them.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Each lazily imported public name and the submodule that defines it.
_LAZY_NAMES = {
    "RemoteLogMetadataManager": "metadata_manager",
    "LocalSegment": "partition_dir",
    "read_partition_dir": "partition_dir",
    "PartitionListing": "remote_log",
    "list_partition": "remote_log",
    "list_partitions": "remote_log",
    "RemoteStorageManager": "storage_manager",
    "IndexType": "types",
    "LogSegmentData": "types",
    "RemoteLogIndexEntry": "types",
    "RemoteLogSegmentId": "types",
    "RemoteLogSegmentMetadata": "types",
    "RemoteLogSegmentState": "types",
    "RemotePartitionDeleteState": "types",
    "TopicIdPartition": "types",
    "TopicPartition": "types",
}

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


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it; raises
    :class:`AttributeError` for a name the package does not have (and so
    ``from offload_core.rsm import copy_lease`` still imports that submodule)."""
    if name not in _LAZY_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
