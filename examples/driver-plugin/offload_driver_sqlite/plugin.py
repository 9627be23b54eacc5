"""The hook implementations offload-core finds through the entry point."""

from offload_core.hooks import DriverRegistrar, OffloaderRegistrar, hookimpl

from .driver import SqliteDriver
from .offloader import PackedLedgerOffloader


@hookimpl
def offload_core_register_drivers(register: DriverRegistrar) -> None:
    register(SqliteDriver, name="sqlite", schemes=("sqlite",))


@hookimpl
def offload_core_register_offloaders(register: OffloaderRegistrar) -> None:
    # Ledgers offloaded to a sqlite store go through this offloader, as
    # Pulsar's file-system offloader serves its "filesystem" driver.
    register(PackedLedgerOffloader, name="packed", drivers=("sqlite",))
