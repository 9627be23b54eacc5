"""offload-core: tiered storage for append-only logs.

The public API is what ``__all__`` lists; everything else is private.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from .errors import (
    AlreadyExistsError,
    ConfigError,
    DriverNotInstalledError,
    FormatError,
    InvalidKeyError,
    InvalidMetadataError,
    InvalidRangeError,
    NotFoundError,
    OffloadError,
    PluginLoadError,
    TransientStorageError,
)
from .hooks import Event, hookimpl
from .model import ObjectInfo
from .plugins import PluginManager, open_driver
from .storage import FsspecDriver, StorageDriver

try:
    __version__ = _metadata.version("offload-core")
except _metadata.PackageNotFoundError:  # running from a source tree without install
    __version__ = "0+unknown"

__all__ = [
    "AlreadyExistsError",
    "ConfigError",
    "DriverNotInstalledError",
    "Event",
    "FormatError",
    "FsspecDriver",
    "InvalidKeyError",
    "InvalidMetadataError",
    "InvalidRangeError",
    "NotFoundError",
    "ObjectInfo",
    "OffloadError",
    "PluginLoadError",
    "PluginManager",
    "StorageDriver",
    "TransientStorageError",
    "__version__",
    "hookimpl",
    "open_driver",
]
