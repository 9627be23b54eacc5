"""The ``retention`` job: delete offloads older than a cut-off, and find
orphans (offloads no managed ledger's metadata refers to), whichever
offloader wrote them (v1 ledgers, v2 segments, and any kind an installed
offloader registers: :mod:`offload_core.offload.stored`). Dry-run by
default: it reports what it would delete and deletes nothing.

An offload's age is what its kind reads from the store on the executors: a
v1 ledger's creation time (``ctime``) in the BookKeeper metadata inside its
index object (for ledgers offload-core offloaded, the time the ledger was
sealed); a segment's, the newest close time of the ledgers its index
records (unknown, so kept, while one was open when it was written). With
a metadata store, offloads a managed ledger refers to are never deleted
here (the managed ledger's own retention trims them, metadata and objects
together); without one, every offload older than the cut-off goes.
Deletion removes the index last, so an interrupted run leaves an index
that the next run still ages and deletes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ..managed_ledger.lifecycle.references import offload_references
from ..managed_ledger.metadata_store import MetadataStore
from ..offload.stored.kinds import StoredOffload
from ..offload.stored.retention import RetentionDecision, decide, delete_offload
from ..plugins import PluginManager
from ..storage import StorageDriver
from .progress import Progress
from .session import classic_context
from .store_tasks import Found, Store, installed_kinds, map_with_driver

__all__ = ["RETENTION_SCHEMA", "RetentionDecision", "RetentionResult", "retention"]

RETENTION_SCHEMA = (
    "kind string, ledger_ids array<long>, uuid string, keys array<string>, bytes long, created timestamp, "
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
    plugin_manager: PluginManager | None = None,
) -> RetentionResult:
    """Decide for every offload under ``url`` (and ``prefix``) of every kind
    the offloaders of ``plugin_manager`` (default: the process's) write
    whether it goes: created before ``cutoff`` (an aware datetime) and not
    referred to by ``metadata``; with ``delete_orphans``, every orphan goes
    whatever its age. Deletes only when ``dry_run`` is false.

    Raises :class:`ValueError` for a naive ``cutoff``,
    :class:`ConfigError` for a Spark Connect session, and driver errors if
    the store cannot be listed. An offload whose deletion fails is reported
    as ``failed``; the others still go."""
    classic_context(spark, "retention")
    if cutoff.tzinfo is None:
        raise ValueError("cutoff must be timezone-aware, e.g. datetime(2026, 1, 1, tzinfo=UTC)")
    cutoff_ms = int(cutoff.timestamp() * 1000)
    store = Store.of(url, driver_options)
    found = store.offloads(installed_kinds(plugin_manager), prefix)
    references = offload_references(metadata) if metadata is not None else None
    described = map_with_driver(spark, "retention: reading ages", found, _describe, store, progress=progress)
    decisions = [decide(offload, references, cutoff_ms, delete_orphans, dry_run) for offload in described]
    doomed = [(kind, d.offload) for (kind, _), d in zip(found, decisions, strict=True) if d.action == "deleted"]
    deleting = f"retention: deleting {len(doomed)} offload(s)"
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
            d.offload.kind, list(d.offload.ledger_ids), d.offload.uuid, d.keys, d.size,
            None if d.created_ms is None else datetime.fromtimestamp(d.created_ms / 1000, UTC),
            d.referenced_by, d.orphan, d.action, d.reason,
        )
        for d in decisions
    ]  # fmt: skip
    return RetentionResult(decisions, spark.createDataFrame(rows, RETENTION_SCHEMA), dry_run)


def _describe(driver: StorageDriver, found: Found) -> StoredOffload:
    kind, offload = found
    return kind.describe(driver, offload)


def _delete(driver: StorageDriver, found: Found) -> str | None:
    kind, offload = found
    return delete_offload(kind, driver, offload)
