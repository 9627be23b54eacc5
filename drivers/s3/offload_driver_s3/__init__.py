"""offload-core storage driver for Amazon S3 and S3-compatible stores."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .driver import S3Driver

__all__ = ["S3Driver"]


def __getattr__(name: str) -> Any:
    # The SDK loads when the driver is first used, not when offload-core
    # discovers the plugin: commands that never open a store start fast.
    if name == "S3Driver":
        from .driver import S3Driver

        return S3Driver
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
