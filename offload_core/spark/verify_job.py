"""The ``verify`` job: check every offload in a store, in parallel, whichever
offloader wrote it (v1 ledgers, v2 segments, and any kind an installed
offloader registers: :mod:`offload_core.offload.stored`).

Stage one plans each offload on the executors (objects present, format
version, index decodes, lengths match); stage two checks each of its parts
(a block's framing against its index entry); the driver then combines each
offload's outcomes (entry ids contiguous, lengths add up). Nothing is
written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..offload.stored.kinds import OffloadPlan, OffloadReport, StoredKind
from ..plugins import PluginManager
from .progress import Progress
from .session import classic_context
from .store_tasks import Found, Store, installed_kinds, map_with_driver

__all__ = ["DEFECT_SCHEMA", "VerifyResult", "verify_store"]

DEFECT_SCHEMA = "ledger_id long, uuid string, key string, offset long, problem string"


@dataclass(frozen=True)
class VerifyResult:
    """Every offload's report, and the defects as a DataFrame
    (:data:`DEFECT_SCHEMA`, one row per defect; ``ledger_id`` null for a
    defect of a segment as a whole)."""

    reports: list[OffloadReport]
    defects: Any

    @property
    def ok(self) -> bool:
        return all(report.ok for report in self.reports)


def verify_store(
    spark: Any,
    url: str,
    *,
    driver_options: Mapping[str, Any] | None = None,
    prefix: str = "",
    ledgers: Iterable[int] | None = None,
    progress: Callable[[Progress], None] | None = None,
    plugin_manager: PluginManager | None = None,
) -> VerifyResult:
    """Verify every offload under ``url`` (``prefix``; only those holding
    one of ``ledgers`` if given) of every kind the offloaders of
    ``plugin_manager`` (default: the process's) write. Incomplete offloads
    are reported as defects.

    Raises :class:`ConfigError` / :class:`DriverNotInstalledError` for a
    bad URL or options or a Spark Connect session, and storage errors if
    the store cannot be listed."""
    classic_context(spark, "verify")
    store = Store.of(url, driver_options)
    wanted = None if ledgers is None else set(ledgers)
    found = [
        (kind, offload)
        for kind, offload in store.offloads(installed_kinds(plugin_manager), prefix)
        if wanted is None or not offload.ledger_ids or wanted & set(offload.ledger_ids)
    ]
    planned = map_with_driver(spark, "verify: reading indexes", found, _plan, store, progress=progress)
    # An offload whose ledgers only its index names is chosen once it is read.
    chosen = [(kind, plan) for (kind, _), plan in zip(found, planned, strict=True)
              if wanted is None or wanted & set(plan.offload.ledger_ids)]  # fmt: skip
    plans = [(kind, plan) for kind, plan in chosen if isinstance(plan, OffloadPlan)]
    tasks = [(kind, number, task) for number, (kind, plan) in enumerate(plans) for task in plan.tasks]
    outcomes = map_with_driver(
        spark, "verify: checking blocks", tasks, _check, store, progress=progress, tasks_per_slot=8
    )
    by_plan: dict[int, list[Any]] = {}
    for (_, number, _), outcome in zip(tasks, outcomes, strict=True):
        by_plan.setdefault(number, []).append(outcome)
    reports = [plan for _, plan in chosen if isinstance(plan, OffloadReport)]
    reports += [kind.summarize(plan, by_plan.get(number, [])) for number, (kind, plan) in enumerate(plans)]
    reports.sort(key=lambda report: (report.offload.ledger_ids, report.offload.uuid))
    rows = [
        (defect.ledger_id, defect.uuid, defect.key, defect.offset, defect.problem)
        for report in reports
        for defect in report.defects
    ]
    return VerifyResult(reports, spark.createDataFrame(rows, DEFECT_SCHEMA))


def _plan(driver: Any, found: Found) -> OffloadPlan | OffloadReport:
    kind, offload = found
    return kind.plan(driver, offload)


def _check(driver: Any, item: tuple[StoredKind, int, Any]) -> Any:
    kind, _, task = item
    return kind.check(driver, task)
