"""Finding MapFile ledgers in a store by their keys,
``{prefix}{ManagedLedgerName}/{ledgerId}-{uuid}/{data,index,.data.crc,.index.crc}``,
and summing one up from its metadata (key -1) and index."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

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
T = TypeVar("T")


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
    found = _directories(objects, prefix, dict, _add_file)
    return [
        MapFileLedger(prefix, uuid, ledger_id, by_name.get(DATA), by_name.get(INDEX), managed_ledger=managed_ledger,
                      files=tuple(sorted(by_name.values(), key=lambda info: info.key)))
        for (ledger_id, managed_ledger, uuid), by_name in sorted(found.items(), key=lambda item: item[0])
    ]  # fmt: skip


def _add_file(by_name: dict[str, ObjectInfo], name: str, info: ObjectInfo) -> dict[str, ObjectInfo]:
    by_name[name] = info
    return by_name


_COMPLETE = {DATA: 1, INDEX: 2}


def complete_mapfile_sizes(objects: Iterable[ObjectInfo], prefix: str) -> list[tuple[int, str, str, int]]:
    """``(ledger id, managed ledger, uuid, bytes of its files)`` of every
    complete MapFile directory (``data`` and ``index`` both there), in
    :func:`group_mapfiles`'s order: what a read's plan needs of the
    listing, without a record per file (each managed ledger's name held
    once)."""
    found = _directories(objects, prefix, lambda: (0, 0), _add_size)
    return sorted((*directory, size) for directory, (size, parts) in found.items() if parts == 3)


def _add_size(held: tuple[int, int], name: str, info: ObjectInfo) -> tuple[int, int]:
    """Its bytes, and which of data (1), index (2) are there."""
    return held[0] + info.size, held[1] | _COMPLETE.get(name, 0)


def _directories(
    objects: Iterable[ObjectInfo], prefix: str, start: Callable[[], T], add: Callable[[T, str, ObjectInfo], T]
) -> dict[tuple[int, str, str], T]:
    """The listing grouped into MapFile directories, ``(ledger id, managed
    ledger, uuid)`` each (each managed ledger's name one string), with what
    ``add(held, file name, record)`` makes of its files from ``start()``;
    keys of no MapFile directory are ignored."""
    names: dict[str, str] = {}
    found: dict[tuple[int, str, str], T] = {}
    for info in objects:
        match = _FILE.search(info.key, len(prefix))
        if match is None or int(match["ledger"]) > 2**63 - 1:
            continue
        managed_ledger = info.key[len(prefix) : match.start()]
        directory = (int(match["ledger"]), names.setdefault(managed_ledger, managed_ledger), match["uuid"])
        held = found.get(directory)
        found[directory] = add(start() if held is None else held, match["name"], info)
    return found


def read_mapfile_ledger(driver: StorageDriver, ledger: MapFileLedger) -> MapFileReadHandle:
    """Open ``ledger`` for reading (see
    :meth:`MapFileLedgerOffloader.read_offloaded` for what it raises)."""
    offloader = MapFileLedgerOffloader(driver, prefix=ledger.prefix)
    return offloader.read_offloaded(ledger.ledger_id, ledger.uuid, driver_metadata_of(ledger))


def driver_metadata_of(ledger: MapFileLedger) -> dict[str, str]:
    """What ``read_offloaded`` / ``delete_offloaded`` need to find ``ledger``."""
    return {MANAGED_LEDGER_NAME: ledger.managed_ledger, "prefix": ledger.prefix}
