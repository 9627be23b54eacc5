"""Registers the GCS driver with offload-core."""

from offload_core.hooks import DriverRegistrar, hookimpl

from .driver import GCSDriver


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    register(GCSDriver, name="gcs", aliases=("google-cloud-storage",), schemes=("gs", "gcs"))
