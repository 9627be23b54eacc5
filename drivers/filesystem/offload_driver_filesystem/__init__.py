"""offload-core storage driver for a local directory."""

from __future__ import annotations

from .driver import FilesystemDriver
from .plugin import offload_core_register_drivers

__all__ = ["FilesystemDriver", "offload_core_register_drivers"]
