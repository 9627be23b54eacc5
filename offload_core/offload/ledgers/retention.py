"""Deciding what retention deletes among offloaded ledgers: shared by the
Spark ``retention`` job and ``offload ledgers orphans`` (for stores small
enough not to need Spark).

A ledger's age is its creation time (``ctime``) in the BookKeeper metadata
inside its index object. With a metadata store, ledgers a managed ledger
refers to are never deleted here (the managed ledger's own retention trims
them, metadata and objects together) and the others are orphans. Deletion
removes the data object before the index, so an interrupted run leaves an
index that the next run still finds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import FormatError, NotFoundError
from ...formats import pulsar_v1 as v1
from ...storage import StorageDriver
from .inventory import OffloadedLedger

__all__ = ["RetentionDecision", "decide", "delete_ledger_objects", "ledger_ctime_ms"]


@dataclass(frozen=True)
class RetentionDecision:
    """What the job does (or, in a dry run, would do) with one offloaded ledger.

    ``action`` is ``delete`` (dry run), ``deleted``, ``keep`` or ``failed``.
    ``orphan`` is ``None`` without a metadata store (it cannot be known)."""

    ledger: OffloadedLedger
    created_ms: int | None
    referenced_by: str | None
    orphan: bool | None
    action: str
    reason: str

    @property
    def keys(self) -> list[str]:
        present = [(self.ledger.data, self.ledger.data_key), (self.ledger.index, self.ledger.index_key)]
        return [key for info, key in present if info is not None]

    @property
    def size(self) -> int:
        return sum(info.size for info in (self.ledger.data, self.ledger.index) if info is not None)


def decide(
    ledger: OffloadedLedger,
    created: int | None,
    references: dict[tuple[int, str], str] | None,
    cutoff_ms: int | None,
    delete_orphans: bool,
    dry_run: bool,
) -> RetentionDecision:
    """What happens to ``ledger``: kept when a managed ledger refers to it;
    deleted when it is an orphan and ``delete_orphans``, or was created
    before ``cutoff_ms`` (``None``: no age cut-off); kept otherwise.
    ``references`` ``None`` means no metadata store: orphans are unknown."""
    referenced_by = None if references is None else references.get((ledger.ledger_id, ledger.uuid))
    orphan = None if references is None else referenced_by is None
    go = "delete" if dry_run else "deleted"

    def decided(action: str, reason: str) -> RetentionDecision:
        return RetentionDecision(ledger, created, referenced_by, orphan, action, reason)

    if referenced_by is not None:
        return decided("keep", f"referenced by managed ledger {referenced_by} (its retention policy trims it)")
    if orphan and delete_orphans:
        return decided(go, "orphan: no managed ledger refers to it")
    if cutoff_ms is None:
        return decided("keep", "orphan (kept: pass --delete to delete orphans)" if orphan else "no age cut-off")
    if created is None:
        return decided("keep", "age unknown: the index is missing or unreadable")
    if created < cutoff_ms:
        return decided(go, "created before the cut-off" + (" (orphan)" if orphan else ""))
    return decided("keep", "created after the cut-off" + (" (orphan)" if orphan else ""))


def ledger_ctime_ms(driver: StorageDriver, ledger: OffloadedLedger) -> int | None:
    """The ledger's creation time from its index; ``None`` if unknown."""
    if ledger.index is None:
        return None
    try:
        ctime = int(v1.decode_index(driver.read(ledger.index_key)).metadata().ctime)
    except (FormatError, NotFoundError):
        return None
    return ctime or None  # ledgers written without a creation time


def delete_ledger_objects(driver: StorageDriver, ledger: OffloadedLedger) -> str | None:
    """Delete the data object, then the index; the error, or ``None``."""
    try:
        driver.delete(ledger.data_key)
        driver.delete(ledger.index_key)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None
