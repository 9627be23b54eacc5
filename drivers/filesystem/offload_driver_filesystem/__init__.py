"""offload-core storage driver for a local directory.

This package is the plugin module its entry point names: it holds the hook
implementation, and ``FilesystemDriver`` is imported on first use (PEP
562), so loading the plugin (every ``offload`` verb builds a registry)
does not import fsspec."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .plugin import offload_core_register_drivers

if TYPE_CHECKING:
    from .driver import FilesystemDriver

__all__ = ["FilesystemDriver", "offload_core_register_drivers"]


def __getattr__(name: str) -> Any:
    if name == "FilesystemDriver":
        from .driver import FilesystemDriver

        return FilesystemDriver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
