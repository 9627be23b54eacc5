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

from ..managed_ledger.lifecycle.references import offload_references
from ..managed_ledger.metadata_store import MetadataStore
from ..offload.ledgers.retention import RetentionDecision, decide, delete_ledger_objects, ledger_ctime_ms
from .progress import Progress
from .store_tasks import Store, map_with_driver

__all__ = ["RETENTION_SCHEMA", "RetentionDecision", "RetentionResult", "retention"]

RETENTION_SCHEMA = (
    "ledger_id long, uuid string, keys array<string>, bytes long, created timestamp, "
    "referenced_by string, orphan boolean, action string, reason string"
)


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
    ages = map_with_driver(spark, "retention: reading ledger ages", found, ledger_ctime_ms, store, progress=progress)
    decisions = [
        decide(ledger, created, references, cutoff_ms, delete_orphans, dry_run)
        for ledger, created in zip(found, ages, strict=True)
    ]
    doomed = [decision.ledger for decision in decisions if decision.action == "deleted"]
    deleting = f"retention: deleting {len(doomed)} ledger(s)"
    errors = iter(map_with_driver(spark, deleting, doomed, delete_ledger_objects, store, progress=progress))
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
