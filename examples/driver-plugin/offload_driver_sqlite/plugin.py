"""The hook implementation offload-core finds through the entry point."""

from offload_core.hooks import DriverRegistrar, hookimpl

from .driver import SqliteDriver


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    register(SqliteDriver, name="sqlite", schemes=("sqlite",))
