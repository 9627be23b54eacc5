"""Registers the S3 driver with offload-core."""

from __future__ import annotations

from offload_core.hooks import DriverRegistrar, hookimpl


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    from .driver import S3Driver  # the SDK loads when a registry is built, not at discovery

    register(S3Driver, name="s3", aliases=("aws-s3", "S3"), schemes=("s3", "s3a"))
