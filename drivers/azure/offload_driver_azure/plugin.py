"""Registers the Azure Blob driver with offload-core."""

from offload_core.hooks import DriverRegistrar, hookimpl

from .driver import AzureBlobDriver


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    register(AzureBlobDriver, name="azure", aliases=("azureblob",), schemes=("az", "abfs", "abfss"))
