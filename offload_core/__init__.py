"""offload-core: tiered storage for append-only logs.

The public API is what ``__all__`` lists; everything else is private.

Importing the package loads only its error types: every other public name
is imported on first use (PEP 562 ``__getattr__``), so ``offload --version``
and ``offload --help`` start without the Kafka, offload and transform
modules behind them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
    KeyUnavailableError,
    LostEntriesError,
    NotFoundError,
    OffloadError,
    PluginLoadError,
    StateError,
    TransientStorageError,
)

if TYPE_CHECKING:
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

    __version__: str

# Each lazily imported public name and the submodule that defines it.
_LAZY_NAMES = {
    "FsspecDriver": "fsspec_driver",
    "Event": "hooks",
    "hookimpl": "hooks",
    "Entry": "model",
    "ObjectInfo": "model",
    "Temporary": "model",
    "BlobStoreLedgerOffloader": "offload",
    "InMemoryReadHandle": "offload",
    "LedgerOffloader": "offload",
    "OffloadResult": "offload",
    "ReadHandle": "offload",
    "open_offloader": "offload",
    "PluginManager": "plugins",
    "default_plugin_manager": "plugins",
    "open_driver": "plugins",
    "RemoteLogMetadataManager": "rsm",
    "RemoteStorageManager": "rsm",
    "TopicIdPartition": "rsm",
    "TopicPartition": "rsm",
    "StorageDriver": "storage",
}


def _installed_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("offload-core")
    except metadata.PackageNotFoundError:  # running from a source tree without install
        return "0+unknown"


def __getattr__(name: str) -> Any:
    """Import a public name on first use and keep it; raises
    :class:`AttributeError` for a name the package does not have."""
    if name == "__version__":
        value: Any = _installed_version()
    elif name in _LAZY_NAMES:
        value = getattr(importlib.import_module(f".{_LAZY_NAMES[name]}", __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
    "KeyUnavailableError",
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
