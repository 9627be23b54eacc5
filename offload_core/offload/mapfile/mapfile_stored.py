"""MapFile ledgers as a kind of stored offload (:class:`~offload_core.offload.stored.kinds.ReadableKind`):
the store-wide jobs (Spark ``verify`` and ``retention``) and Spark's
``pulsar-offload`` source serve them through it.

A directory ``{ManagedLedgerName}/{ledgerId}-{uuid}/`` is one offload of
one ledger; it is complete when both ``data`` and ``index`` are there (the
offloader writes ``index`` last). Its age is the ledger's creation time
(``ctime``) in the ``LedgerMetadataFormat`` at key -1 of ``data``, the
only time Pulsar's MapFile holds; unknown while the directory is
unfinished, so an offload still being written is never aged out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

from ...errors import FormatError, NotFoundError, OffloadError
from ...storage import StorageDriver
from ..ledgers.verify import LedgerReport
from ..reading.read_ahead import ReadAheadPool
from ..stored.kinds import Located, OffloadPlan, OffloadReport, StoredOffload
from .mapfile_inventory import (
    MapFileLedger,
    complete_mapfile_sizes,
    driver_metadata_of,
    find_mapfile_ledgers,
    group_mapfiles,
)
from .mapfile_offloader import MapFileLedgerOffloader, delete_mapfile_files, ledger_directory
from .mapfile_read_handle import MapFileReadHandle
from .mapfile_verify import verify_mapfile_ledger

__all__ = ["MAPFILE_LEDGERS", "MapFileLedgers"]

_READ_BATCH = 256  # entries per read of the source: a few MB at most for Pulsar's usual entry sizes


class MapFileLedgers:
    """The :class:`~offload_core.offload.stored.kinds.StoredKind` (and
    ``ReadableKind``, ``LocatableKind``: its locator is the directory) of
    MapFile ledger directories. Verifying one is one
    task: ``data`` is checked unit by unit from its start (keys must run
    -1, 0, 1, ... across units, so its parts cannot be checked apart), with
    the ``.crc`` files where there are any."""

    name = "pulsar-mapfile"

    def stored(self, ledger: MapFileLedger) -> StoredOffload:
        """``ledger`` as a stored offload."""
        return StoredOffload(self.name, ledger.uuid, (ledger.ledger_id,), tuple(ledger.file_keys),
                             sum(info.size for info in ledger.files), ledger.complete,
                             f"MapFile ledger {ledger.ledger_id} ({ledger.managed_ledger})", ledger)  # fmt: skip

    def find(self, driver: StorageDriver, prefix: str) -> Sequence[StoredOffload]:
        return [self.stored(ledger) for ledger in find_mapfile_ledgers(driver, prefix)]

    def located(self, driver: StorageDriver, prefix: str) -> Iterator[Located]:
        """Every complete directory in the listing's order (of their keys:
        by managed ledger, then the ledger id's digits as text), each as
        the listing passes it (:func:`complete_mapfile_sizes`), not in
        :meth:`find`'s ledger-id order, which would hold every directory
        until the listing ends. A read's plan needs no order of ledgers: a
        query's rows have none without an ORDER BY (Pulsar's whole-ledger
        objects are planned in their listing's, uuid, order too), a
        ledger's entries stay in order in its task, and a second copy of a
        ledger is found from the planned ids in any order."""
        for ledger_id, managed_ledger, uuid, size in complete_mapfile_sizes(driver.list(prefix), prefix):
            yield Located(prefix + ledger_directory(managed_ledger, ledger_id, uuid), uuid, (ledger_id,), size)

    def locate(self, driver: StorageDriver, locator: str) -> StoredOffload:
        # A listing of the directory alone; a nested directory's files are another ledger's.
        found = [ledger for ledger in group_mapfiles(driver.list(locator + "/"), "") if ledger.directory == locator]
        if not found:
            raise NotFoundError(
                f"MapFile ledger directory {locator!r} is no longer in the store (deleted since the read was "
                "planned: plan the read again)",
                key=locator,
            )
        return self.stored(found[0])

    def describe(self, driver: StorageDriver, offload: StoredOffload) -> StoredOffload:
        if not offload.complete:
            return offload
        try:
            # Its age only: a damaged .crc (which verify reports) must not make an old ledger ageless.
            with _opened(driver, offload.detail, check_checksums=False) as handle:
                ctime = int(handle.metadata.ctime)
        except (FormatError, OffloadError):
            return offload
        return replace(offload, created_ms=ctime or None)  # ledgers written without a creation time

    def plan(self, driver: StorageDriver, offload: StoredOffload) -> OffloadPlan | OffloadReport:
        ledger: MapFileLedger = offload.detail
        if not offload.complete:  # reported from the listing alone
            return _report(offload, verify_mapfile_ledger(driver, ledger))
        return OffloadPlan(offload, (ledger,), None)

    def check(self, driver: StorageDriver, task: MapFileLedger) -> LedgerReport:
        return verify_mapfile_ledger(driver, task)

    def summarize(self, plan: OffloadPlan, outcomes: Sequence[LedgerReport]) -> OffloadReport:
        (report,) = outcomes
        return _report(plan.offload, report)

    def delete(self, driver: StorageDriver, offload: StoredOffload) -> None:
        ledger: MapFileLedger = offload.detail
        delete_mapfile_files(driver, ledger.directory, ledger.file_keys)

    def entries(self, driver: StorageDriver, offload: StoredOffload, ledger_id: int) -> Iterator[tuple[int, bytes]]:
        ledger: MapFileLedger = offload.detail
        if ledger_id != ledger.ledger_id:
            return
        with _opened(driver, ledger) as handle:
            for first in range(0, handle.last_entry_id + 1, _READ_BATCH):
                last = min(first + _READ_BATCH - 1, handle.last_entry_id)
                for entry in handle.read(first, last):
                    yield entry.entry_id, entry.data


@contextmanager
def _opened(
    driver: StorageDriver, ledger: MapFileLedger, *, check_checksums: bool = True
) -> Iterator[MapFileReadHandle]:
    """``ledger`` open for reading, with a read-ahead pool of its own that
    is closed with it (an offloader's own pool would outlive the handle)."""
    pool = ReadAheadPool()
    try:
        offloader = MapFileLedgerOffloader(driver, prefix=ledger.prefix, read_ahead=pool,
                                           check_checksums=check_checksums)  # fmt: skip
        handle = offloader.read_offloaded(ledger.ledger_id, ledger.uuid, driver_metadata_of(ledger))
        try:
            yield handle
        finally:
            handle.close()
    finally:
        pool.close()


def _report(offload: StoredOffload, report: LedgerReport) -> OffloadReport:
    return OffloadReport(offload, report.blocks, report.entries, report.entry_bytes, report.defects)


MAPFILE_LEDGERS = MapFileLedgers()
