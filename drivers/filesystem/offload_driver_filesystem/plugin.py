"""Registers the filesystem driver with offload-core."""

from __future__ import annotations

from offload_core.hooks import DriverRegistrar, hookimpl


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    # By path, as the cloud drivers: fsspec loads when the driver is first
    # used, not whenever a registry is built (every `offload` verb builds one).
    register("offload_driver_filesystem.driver:FilesystemDriver", name="filesystem",
             aliases=("local-directory", "file", "local"), schemes=("file",))  # fmt: skip
