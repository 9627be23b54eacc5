"""Registers the S3 driver with offload-core."""

from offload_core.hooks import DriverRegistrar, hookimpl

from .driver import S3Driver


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    register(S3Driver, name="s3", aliases=("aws-s3", "S3"), schemes=("s3", "s3a"))
