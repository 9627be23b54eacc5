"""Finding MapFile ledgers in a store by their keys,
``{prefix}{ManagedLedgerName}/{ledgerId}-{uuid}/{data,index,.data.crc,.index.crc}``,
and summing one up from its metadata (key -1) and index."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ...errors import StateError
from ...model import ObjectInfo
from ...storage import StorageDriver
from ..ledgers.inventory import OffloadedLedger
from .mapfile_offloader import DATA, INDEX, MANAGED_LEDGER_NAME, MapFileLedgerOffloader, ledger_directory
from .mapfile_read_handle import MapFileReadHandle

__all__ = [
    "MapFileLedger",
    "complete_mapfile_sizes",
    "driver_metadata_of",
    "find_mapfile_ledgers",
    "group_mapfiles",
    "read_mapfile_ledger",
]

_FILE = re.compile(
    r"(?:^|/)(?P<ledger>0|[1-9][0-9]{0,18})-"
    r"(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"/(?P<name>data|index|\.data\.crc|\.index\.crc)$"
)


@dataclass(frozen=True)
class MapFileLedger(OffloadedLedger):
    """One MapFile ledger directory: ``data`` and ``index`` (either may be
    missing: an offload that never finished), and every file in it."""

    managed_ledger: str = ""
    files: tuple[ObjectInfo, ...] = ()

    @property
    def directory(self) -> str:
        return self.prefix + ledger_directory(self.managed_ledger, self.ledger_id, self.uuid)

    @property
    def data_key(self) -> str:
        return f"{self.directory}/{DATA}"

    @property
    def index_key(self) -> str:
        return f"{self.directory}/{INDEX}"

    @property
    def file_keys(self) -> list[str]:
        """Every file of the directory (the ``.crc`` files too)."""
        return [info.key for info in self.files]


def find_mapfile_ledgers(driver: StorageDriver, prefix: str = "") -> list[MapFileLedger]:
    """Every MapFile ledger directory (complete or not) whose keys start
    with ``prefix``, sorted by ledger id, then managed ledger and uuid."""
    return group_mapfiles(driver.list(prefix), prefix)


def group_mapfiles(objects: Iterable[ObjectInfo], prefix: str) -> list[MapFileLedger]:
    """Group the files of MapFile directories; other keys are ignored."""
    names: dict[str, str] = {}
    found: dict[tuple[int, str, str], dict[str, ObjectInfo]] = {}
    for ledger_id, managed_ledger, uuid, name, info in _mapfile_files(objects, prefix):
        found.setdefault((ledger_id, names.setdefault(managed_ledger, managed_ledger), uuid), {})[name] = info
    return [
        MapFileLedger(prefix, uuid, ledger_id, by_name.get(DATA), by_name.get(INDEX), managed_ledger=managed_ledger,
                      files=tuple(sorted(by_name.values(), key=lambda info: info.key)))
        for (ledger_id, managed_ledger, uuid), by_name in sorted(found.items(), key=lambda item: item[0])
    ]  # fmt: skip


def _mapfile_files(objects: Iterable[ObjectInfo], prefix: str) -> Iterator[tuple[int, str, str, str, ObjectInfo]]:
    """Each file of a MapFile directory among ``objects``: ``(ledger id,
    managed ledger, uuid, file name, its record)``; other keys are
    ignored."""
    for info in objects:
        match = _FILE.search(info.key, len(prefix))
        if match is not None and int(match["ledger"]) <= 2**63 - 1:
            yield int(match["ledger"]), info.key[len(prefix) : match.start()], match["uuid"], match["name"], info


def complete_mapfile_sizes(objects: Iterable[ObjectInfo], prefix: str) -> Iterator[tuple[int, str, str, int]]:
    """``(ledger id, managed ledger, uuid, bytes of its files)`` of every
    complete MapFile directory (``data`` and ``index`` both there) among
    ``objects``, a listing sorted by key (as every driver lists), each as
    soon as its ``index`` is listed, so in the order of the directories'
    keys: what a read's plan needs of the listing, without a record per
    file, holding only the directories the listing is in. ``index`` sorts
    after a directory's other files (``.data.crc``, ``.index.crc``,
    ``data``); a managed ledger whose name runs on inside another's
    ledger directory (``a/7-{uuid}/b``) has its directories listed among
    that one's files, so the open directories are a stack, each nested
    in the one below it.

    Raises :class:`StateError` if the listing is not sorted (a driver
    breaking its contract), rather than miss a directory."""
    open_directories: list[_OpenDirectory] = []  # the innermost last
    previous = ""
    for ledger_id, managed_ledger, uuid, name, info in _mapfile_files(objects, prefix):
        key = info.key
        if key < previous:
            raise StateError(
                f"the store listed {key!r} after {previous!r}: MapFile directories are summed up from a listing "
                "sorted by key, which every storage driver must give (StorageDriver.list; "
                "offload_core.testing.DriverContract checks it): fix the driver's list()"
            )
        previous = key
        directory = key[: len(key) - len(name)]
        while open_directories and not key.startswith(open_directories[-1].directory):
            open_directories.pop()  # left by the listing: it has no index (the last of its files)
        if not open_directories or open_directories[-1].directory != directory:
            open_directories.append(_OpenDirectory(directory))
        held = open_directories[-1]
        held.size += info.size
        if name == DATA:
            held.has_data = True
        elif name == INDEX:
            open_directories.pop()
            if held.has_data:
                yield ledger_id, managed_ledger, uuid, held.size


@dataclass(slots=True)
class _OpenDirectory:
    """A MapFile directory whose ``index`` the listing has not reached:
    its key prefix (``.../{ledgerId}-{uuid}/``) and what it has seen."""

    directory: str
    size: int = 0
    has_data: bool = False


def read_mapfile_ledger(driver: StorageDriver, ledger: MapFileLedger) -> MapFileReadHandle:
    """Open ``ledger`` for reading (see
    :meth:`MapFileLedgerOffloader.read_offloaded` for what it raises)."""
    offloader = MapFileLedgerOffloader(driver, prefix=ledger.prefix)
    return offloader.read_offloaded(ledger.ledger_id, ledger.uuid, driver_metadata_of(ledger))


def driver_metadata_of(ledger: MapFileLedger) -> dict[str, str]:
    """What ``read_offloaded`` / ``delete_offloaded`` need to find ``ledger``."""
    return {MANAGED_LEDGER_NAME: ledger.managed_ledger, "prefix": ledger.prefix}
