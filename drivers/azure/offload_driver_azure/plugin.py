"""Registers the Azure Blob driver with offload-core."""

from __future__ import annotations

from offload_core.hooks import DriverRegistrar, hookimpl


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    from .driver import AzureBlobDriver  # the SDK loads when a registry is built, not at discovery

    register(AzureBlobDriver, name="azure", aliases=("azureblob",), schemes=("az", "abfs", "abfss"))
