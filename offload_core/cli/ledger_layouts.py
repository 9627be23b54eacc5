"""What ``offload ledgers ls / cat / verify / rm / orphans / sweep`` do differently for the
two ledger layouts: PIP-17 objects (``{uuid}-ledger-{id}`` and its index)
and the file-system offloader's MapFile directories
(``{ManagedLedgerName}/{id}-{uuid}/``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import FormatError, OffloadError
from ..offload.ledger import BlobStoreLedgerOffloader
from ..offload.ledgers.inventory import OffloadedLedger, find_offloaded_ledgers
from ..offload.ledgers.retention import ledger_ctime_ms
from ..offload.ledgers.verify import LedgerReport, verify_ledger
from ..offload.mapfile.mapfile_inventory import MapFileLedger, find_mapfile_ledgers, read_mapfile_ledger
from ..offload.mapfile.mapfile_offloader import delete_mapfile_files
from ..offload.mapfile.mapfile_verify import verify_mapfile_ledger
from ..offload.reading.read_handle import ReadHandle
from ..offload.stored.pulsar_ledgers import PULSAR_LEDGERS
from ..storage import StorageDriver

__all__ = [
    "created_ms",
    "delete_ledger",
    "describe_mapfile",
    "find_ledgers",
    "ledger_bytes",
    "ledger_keys",
    "present_keys",
    "read_ledger",
    "remove_ledger",
    "unfinished_mapfiles",
    "verify_any",
]


def find_ledgers(driver: StorageDriver, prefix: str) -> list[OffloadedLedger]:
    """Every offloaded ledger under ``prefix``, of either layout, by ledger id."""
    found = [*find_offloaded_ledgers(driver, prefix), *find_mapfile_ledgers(driver, prefix)]
    return sorted(found, key=lambda ledger: ledger.ledger_id)


def read_ledger(driver: StorageDriver, ledger: OffloadedLedger) -> ReadHandle:
    """A read handle on ``ledger``, whichever its layout."""
    if isinstance(ledger, MapFileLedger):
        return read_mapfile_ledger(driver, ledger)
    return BlobStoreLedgerOffloader(driver, prefix=ledger.prefix).read_offloaded(ledger.ledger_id, ledger.uuid)


def describe_mapfile(driver: StorageDriver, ledger: MapFileLedger, row: dict[str, Any]) -> dict[str, Any]:
    """``ls``'s row for a MapFile ledger: entries and bytes from key -1,
    index entries as its blocks."""
    row["managed_ledger"] = ledger.managed_ledger
    if not ledger.complete:
        row["state"] = "incomplete (" + ("index" if ledger.index is None else "data") + " missing)"
        return row
    try:
        handle = read_mapfile_ledger(driver, ledger)
    except FormatError as exc:
        row["state"] = f"unreadable: {exc}"
        return row
    except OffloadError as exc:
        row["state"] = f"could not be read: {type(exc).__name__}: {exc}"
        return row
    row.update(entries=handle.last_entry_id + 1, bytes=handle.length, blocks=len(handle.index.keys),
               state="complete (mapfile)")  # fmt: skip
    handle.close()
    return row


def verify_any(driver: StorageDriver, ledger: OffloadedLedger, on_block: Callable[[int], None] | None) -> LedgerReport:
    """``verify``'s report for ``ledger``, whichever its layout."""
    if isinstance(ledger, MapFileLedger):
        return verify_mapfile_ledger(driver, ledger, on_block=on_block)
    return verify_ledger(driver, ledger, on_block=on_block)


def ledger_keys(ledger: OffloadedLedger) -> list[str]:
    """What ``rm`` deletes: both objects, or the whole MapFile directory."""
    if isinstance(ledger, MapFileLedger):
        return ledger.file_keys
    return [ledger.data_key, ledger.index_key]


def ledger_bytes(ledger: OffloadedLedger) -> int:
    """The bytes ``rm`` deletes."""
    files = ledger.files if isinstance(ledger, MapFileLedger) else (ledger.data, ledger.index)
    return sum(info.size for info in files if info is not None)


def present_keys(ledger: OffloadedLedger) -> list[str]:
    """The keys of ``ledger`` that are in the store."""
    if isinstance(ledger, MapFileLedger):
        return ledger.file_keys
    return [key for info, key in ((ledger.data, ledger.data_key), (ledger.index, ledger.index_key)) if info]


def created_ms(driver: StorageDriver, ledger: OffloadedLedger) -> int | None:
    """The ledger's creation time from its BookKeeper metadata (the PIP-17
    index, or a MapFile's key -1); ``None`` when it is missing, unreadable
    or was never recorded."""
    if not isinstance(ledger, MapFileLedger):
        return ledger_ctime_ms(driver, ledger)
    if not ledger.complete:
        return None
    try:
        handle = read_mapfile_ledger(driver, ledger)
    except OffloadError:
        return None
    handle.close()
    return int(handle.metadata.ctime) or None


def remove_ledger(driver: StorageDriver, ledger: OffloadedLedger) -> None:
    """Delete ``ledger``'s files, raising what the driver raises: a PIP-17
    data object before its index; a MapFile directory ``index`` first (see
    :func:`~offload_core.offload.mapfile.mapfile_offloader.delete_mapfile_files`)."""
    if isinstance(ledger, MapFileLedger):
        delete_mapfile_files(driver, ledger.directory, ledger.file_keys)
    else:
        PULSAR_LEDGERS.delete(driver, PULSAR_LEDGERS.stored(ledger, None))


def delete_ledger(driver: StorageDriver, ledger: OffloadedLedger) -> str | None:
    """Delete ``ledger``'s files as :func:`remove_ledger` does; the error as
    text, or ``None``."""
    try:
        remove_ledger(driver, ledger)
    except Exception as exc:  # reported per ledger, so the others still go
        return f"{type(exc).__name__}: {exc}"
    return None


def unfinished_mapfiles(driver: StorageDriver, prefix: str) -> list[MapFileLedger]:
    """The MapFile directories under ``prefix`` without ``index``: offloads
    that never finished (neither Hadoop nor Pulsar nor we read them)."""
    return [ledger for ledger in find_mapfile_ledgers(driver, prefix) if ledger.index is None]
