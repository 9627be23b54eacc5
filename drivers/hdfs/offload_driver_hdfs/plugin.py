"""Registers the HDFS driver with offload-core."""

from offload_core.hooks import DriverRegistrar, hookimpl

from .driver import HdfsDriver


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    register(HdfsDriver, name="hdfs", aliases=("webhdfs",), schemes=("hdfs", "webhdfs"))
