"""The ``retention`` job: delete offloaded ledgers older than a cut-off, and
find orphans (objects no managed ledger's metadata refers to). Dry-run by
default: it reports what it would delete and deletes nothing.

A ledger's age is its creation time (``ctime``) in the BookKeeper metadata
inside its index object, read in parallel on the executors (for ledgers
offload-core offloaded, the time the ledger was sealed). With a
metadata store, ledgers a managed ledger refers to are never deleted here
(the managed ledger's own retention trims them, metadata and objects
together); without one, every ledger older than the cut-off goes.
Deletion removes the data object before the index, so an interrupted run
leaves an index that the next run still ages and deletes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ..errors import FormatError, NotFoundError
from ..formats import pulsar_v1 as v1
from ..managed_ledger.metadata_store import MetadataStore
from ..managed_ledger.references import offload_references
from ..offload.inventory import OffloadedLedger
from ..storage import StorageDriver
from .progress import Progress
from .store_tasks import Store, map_with_driver

__all__ = ["RETENTION_SCHEMA", "RetentionDecision", "RetentionResult", "retention"]

RETENTION_SCHEMA = (
    "ledger_id long, uuid string, keys array<string>, bytes long, created timestamp, "
    "referenced_by string, orphan boolean, action string, reason string"
)


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


@dataclass(frozen=True)
class RetentionResult:
    decisions: list[RetentionDecision]
    actions: Any  # DataFrame of RETENTION_SCHEMA
    dry_run: bool

    @property
    def orphans(self) -> list[RetentionDecision]:
        return [decision for decision in self.decisions if decision.orphan]


def retention(
    spark: Any,
    url: str,
    *,
    cutoff: datetime,
    metadata: MetadataStore | None = None,
    driver_options: Mapping[str, Any] | None = None,
    prefix: str = "",
    delete_orphans: bool = False,
    dry_run: bool = True,
    progress: Callable[[Progress], None] | None = None,
) -> RetentionResult:
    """Decide for every offloaded ledger under ``url`` (and ``prefix``)
    whether it goes: created before ``cutoff`` (an aware datetime) and not
    referred to by ``metadata``; with ``delete_orphans``, every orphan goes
    whatever its age. Deletes only when ``dry_run`` is false.

    Raises :class:`ValueError` for a naive ``cutoff``, and driver errors if
    the store cannot be listed. A ledger whose deletion fails is reported
    as ``failed``; the others still go."""
    if cutoff.tzinfo is None:
        raise ValueError("cutoff must be timezone-aware, e.g. datetime(2026, 1, 1, tzinfo=UTC)")
    cutoff_ms = int(cutoff.timestamp() * 1000)
    store = Store.of(url, driver_options)
    found = store.ledgers(prefix)
    references = offload_references(metadata) if metadata is not None else None
    ages = map_with_driver(spark, "retention: reading ledger ages", found, _age, store, progress=progress)
    decisions = [
        _decide(ledger, created, references, cutoff_ms, delete_orphans, dry_run)
        for ledger, created in zip(found, ages, strict=True)
    ]
    doomed = [decision.ledger for decision in decisions if decision.action == "deleted"]
    deleting = f"retention: deleting {len(doomed)} ledger(s)"
    errors = iter(map_with_driver(spark, deleting, doomed, _delete, store, progress=progress))
    checked = []
    for decision in decisions:
        error = next(errors) if decision.action == "deleted" else None
        if error is not None:
            decision = replace(decision, action="failed", reason=f"{decision.reason}; deleting failed: {error}")
        checked.append(decision)
    decisions = checked
    rows = [
        (
            d.ledger.ledger_id, d.ledger.uuid, d.keys, d.size,
            None if d.created_ms is None else datetime.fromtimestamp(d.created_ms / 1000, UTC),
            d.referenced_by, d.orphan, d.action, d.reason,
        )
        for d in decisions
    ]  # fmt: skip
    return RetentionResult(decisions, spark.createDataFrame(rows, RETENTION_SCHEMA), dry_run)


def _decide(
    ledger: OffloadedLedger,
    created: int | None,
    references: dict[tuple[int, str], str] | None,
    cutoff_ms: int,
    delete_orphans: bool,
    dry_run: bool,
) -> RetentionDecision:
    referenced_by = None if references is None else references.get((ledger.ledger_id, ledger.uuid))
    orphan = None if references is None else referenced_by is None
    go = "delete" if dry_run else "deleted"

    def decided(action: str, reason: str) -> RetentionDecision:
        return RetentionDecision(ledger, created, referenced_by, orphan, action, reason)

    if referenced_by is not None:
        return decided("keep", f"referenced by managed ledger {referenced_by} (its retention policy trims it)")
    if orphan and delete_orphans:
        return decided(go, "orphan: no managed ledger refers to it")
    if created is None:
        return decided("keep", "age unknown: the index is missing or unreadable")
    if created < cutoff_ms:
        return decided(go, "created before the cut-off" + (" (orphan)" if orphan else ""))
    return decided("keep", "created after the cut-off" + (" (orphan)" if orphan else ""))


def _age(driver: StorageDriver, ledger: OffloadedLedger) -> int | None:
    if ledger.index is None:
        return None
    try:
        ctime = int(v1.decode_index(driver.read(ledger.index_key)).metadata().ctime)
    except (FormatError, NotFoundError):
        return None
    return ctime or None  # ledgers written without a creation time


def _delete(driver: StorageDriver, ledger: OffloadedLedger) -> str | None:
    try:
        driver.delete(ledger.data_key)
        driver.delete(ledger.index_key)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None
