"""Finding MapFile ledgers in a store by their keys,
``{prefix}{ManagedLedgerName}/{ledgerId}-{uuid}/{data,index,.data.crc,.index.crc}``,
and summing one up from its metadata (key -1) and index."""

from __future__ import annotations

import re
import struct
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

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


_COMPLETE = {DATA: 1, INDEX: 2}


def complete_mapfile_sizes(objects: Iterable[ObjectInfo], prefix: str) -> Iterator[tuple[int, str, str, int]]:
    """``(ledger id, managed ledger, uuid, bytes of its files)`` of every
    complete MapFile directory (``data`` and ``index`` both there), in
    :func:`group_mapfiles`'s order, all of ``objects`` taken before the
    first is given: what a read's plan needs of the listing, without a
    record per file. A directory is held as one bytes key of its ledger
    id, managed ledger (each name held once) and uuid (its 36 characters
    as listed, so it comes back as it was), its size and parts in arrays:
    some 240 bytes a directory at the peak, where a tuple key and a list
    (and the list of tuples returned) were 360."""
    names: dict[str, int] = {}
    found: dict[bytes, int] = {}  # a directory's key -> its number in ``sizes`` and ``parts``
    sizes = array("q")
    parts = bytearray()  # which of data (1), index (2) are there
    for ledger_id, managed_ledger, uuid, name, info in _mapfile_files(objects, prefix):
        number = found.setdefault(_DIRECTORY.pack(ledger_id, names.setdefault(managed_ledger, len(names)),
                                                  uuid.encode()), len(sizes))  # fmt: skip
        if number == len(sizes):
            sizes.append(0)
            parts.append(0)
        sizes[number] += info.size
        parts[number] |= _COMPLETE.get(name, 0)
    ranked = sorted(names)
    rank = array("I", [0] * len(names))
    for position, name in enumerate(ranked):
        rank[names[name]] = position
    # Fixed widths, big-endian: the bytes sort as (ledger id, managed ledger, uuid) do.
    ordered = []
    for directory, number in found.items():
        if parts[number] == 3:
            ledger_id, managed_ledger, uuid = _DIRECTORY.unpack(directory)
            ordered.append(_ORDERED.pack(ledger_id, rank[managed_ledger], uuid, number))
    found.clear()
    ordered.sort()
    for record in ordered:
        ledger_id, position, uuid, number = _ORDERED.unpack(record)
        yield ledger_id, ranked[position], uuid.decode(), sizes[number]


_DIRECTORY = struct.Struct("<qI36s")  # ledger id, managed ledger's number, uuid
_ORDERED = struct.Struct(">QI36sI")  # ledger id, managed ledger's rank, uuid, the directory's number


def read_mapfile_ledger(driver: StorageDriver, ledger: MapFileLedger) -> MapFileReadHandle:
    """Open ``ledger`` for reading (see
    :meth:`MapFileLedgerOffloader.read_offloaded` for what it raises)."""
    offloader = MapFileLedgerOffloader(driver, prefix=ledger.prefix)
    return offloader.read_offloaded(ledger.ledger_id, ledger.uuid, driver_metadata_of(ledger))


def driver_metadata_of(ledger: MapFileLedger) -> dict[str, str]:
    """What ``read_offloaded`` / ``delete_offloaded`` need to find ``ledger``."""
    return {MANAGED_LEDGER_NAME: ledger.managed_ledger, "prefix": ledger.prefix}
