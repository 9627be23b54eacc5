"""Registers the filesystem driver with offload-core."""

from __future__ import annotations

from offload_core.hooks import DriverRegistrar, hookimpl

from .driver import FilesystemDriver


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    register(FilesystemDriver, name="filesystem", aliases=("local-directory", "file", "local"), schemes=("file",))
