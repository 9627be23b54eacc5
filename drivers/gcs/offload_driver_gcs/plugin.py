"""Registers the GCS driver with offload-core."""

from __future__ import annotations

from offload_core.hooks import DriverRegistrar, hookimpl


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    # By path: the SDK loads when the driver is first used, not whenever a
    # registry is built (a command on another store never imports it).
    register(
        "offload_driver_gcs.driver:GCSDriver", name="gcs", aliases=("google-cloud-storage",), schemes=("gs", "gcs")
    )
