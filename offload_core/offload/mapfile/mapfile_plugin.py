"""The built-in plugin of Pulsar's file-system offloader: the MapFile
offloader and the kind of stored offload it writes, registered through
``offload_core_register_offloaders`` as any third-party offloader is (a
module of its own, since the kind reads through the offloader). Both are
imported when the registries are first built, not when the plugin loads:
every ``offload`` command loads the plugins, few use this offloader."""

from __future__ import annotations

from ...hooks import OffloaderRegistrar, hookimpl


@hookimpl
def offload_core_register_offloaders(register: OffloaderRegistrar) -> None:
    from .mapfile_offloader import MapFileLedgerOffloader
    from .mapfile_stored import MAPFILE_LEDGERS

    # It claims no storage driver: "filesystem" is also the local directory
    # driver's name, which the blob-store offloader serves. The broker picks
    # this offloader by name for managedLedgerOffloadDriver = "filesystem".
    register(MapFileLedgerOffloader, name="filesystem", aliases=("mapfile", "hadoop-mapfile"),
             stored=(MAPFILE_LEDGERS,))  # fmt: skip
