"""offload-core: tiered storage for append-only logs.

The public API is what ``__all__`` lists; everything else is private.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from .errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigError,
    ConflictError,
    CopyCancelledError,
    DriverNotInstalledError,
    FormatError,
    InvalidKeyError,
    InvalidMetadataError,
    InvalidRangeError,
    LostEntriesError,
    NotFoundError,
    OffloadError,
    PluginLoadError,
    StateError,
    TransientStorageError,
)
from .fsspec_driver import FsspecDriver
from .hooks import Event, hookimpl
from .model import Entry, ObjectInfo, Temporary
from .offload import (
    BlobStoreLedgerOffloader,
    InMemoryReadHandle,
    LedgerOffloader,
    OffloadResult,
    ReadHandle,
    open_offloader,
)
from .plugins import PluginManager, default_plugin_manager, open_driver
from .rsm import RemoteLogMetadataManager, RemoteStorageManager, TopicIdPartition, TopicPartition
from .storage import StorageDriver

try:
    __version__ = _metadata.version("offload-core")
except _metadata.PackageNotFoundError:  # running from a source tree without install
    __version__ = "0+unknown"

__all__ = [
    "AccessDeniedError",
    "AlreadyExistsError",
    "BlobStoreLedgerOffloader",
    "ConfigError",
    "ConflictError",
    "CopyCancelledError",
    "StateError",
    "DriverNotInstalledError",
    "Entry",
    "Event",
    "FormatError",
    "FsspecDriver",
    "InMemoryReadHandle",
    "InvalidKeyError",
    "InvalidMetadataError",
    "InvalidRangeError",
    "LostEntriesError",
    "LedgerOffloader",
    "NotFoundError",
    "ObjectInfo",
    "OffloadError",
    "OffloadResult",
    "PluginLoadError",
    "PluginManager",
    "ReadHandle",
    "RemoteLogMetadataManager",
    "RemoteStorageManager",
    "StorageDriver",
    "Temporary",
    "TopicIdPartition",
    "TopicPartition",
    "TransientStorageError",
    "__version__",
    "hookimpl",
    "default_plugin_manager",
    "open_driver",
    "open_offloader",
]
