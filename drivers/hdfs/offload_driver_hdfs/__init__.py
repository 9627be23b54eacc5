"""offload-core storage driver for HDFS (WebHDFS)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .driver import HdfsDriver

__all__ = ["HdfsDriver"]


def __getattr__(name: str) -> Any:
    # The SDK loads when the driver is first used, not when offload-core
    # discovers the plugin: commands that never open a store start fast.
    if name == "HdfsDriver":
        from .driver import HdfsDriver

        return HdfsDriver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
