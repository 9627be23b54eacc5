"""The ``verify`` job: check every offloaded ledger in a store, in parallel.

Stage one plans each ledger on the executors (objects present, format
version, index decodes, data length matches); stage two checks every
block's framing against its index entry; the driver then combines each
ledger's blocks (entry ids contiguous, lengths add up to the metadata).
Nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..offload.ledgers.verify import (
    BlockOutcome,
    LedgerPlan,
    LedgerReport,
    plan_ledger,
    read_and_check_block,
    summarize_ledger,
)
from .progress import Progress
from .store_tasks import Store, map_with_driver

__all__ = ["DEFECT_SCHEMA", "VerifyResult", "verify_store"]

DEFECT_SCHEMA = "ledger_id long, uuid string, key string, offset long, problem string"


@dataclass(frozen=True)
class VerifyResult:
    """Every ledger's report, and the defects as a DataFrame
    (:data:`DEFECT_SCHEMA`, one row per defect)."""

    reports: list[LedgerReport]
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
) -> VerifyResult:
    """Verify every offloaded ledger under ``url`` (``prefix``; only
    ``ledgers`` if given). Incomplete offloads are reported as defects.

    Raises :class:`ConfigError` / :class:`DriverNotInstalledError` for a
    bad URL or options, and storage errors if the store cannot be listed."""
    store = Store.of(url, driver_options)
    found = store.ledgers(prefix)
    if ledgers is not None:
        wanted = set(ledgers)
        found = [ledger for ledger in found if ledger.ledger_id in wanted]
    planned = map_with_driver(spark, "verify: reading indexes", found, plan_ledger, store, progress=progress)
    plans = [plan for plan in planned if isinstance(plan, LedgerPlan)]
    tasks = [task for plan in plans for task in plan.blocks]
    outcomes = map_with_driver(
        spark, "verify: checking blocks", tasks, read_and_check_block, store, progress=progress, tasks_per_slot=8
    )
    by_ledger: dict[tuple[str, int], list[BlockOutcome]] = {}
    for outcome in outcomes:
        by_ledger.setdefault((outcome.task.uuid, outcome.task.ledger_id), []).append(outcome)
    reports = [plan for plan in planned if isinstance(plan, LedgerReport)]
    reports += [summarize_ledger(plan, by_ledger.get((plan.ledger.uuid, plan.ledger.ledger_id), [])) for plan in plans]
    reports.sort(key=lambda report: (report.ledger.ledger_id, report.ledger.uuid))
    rows = [
        (defect.ledger_id, defect.uuid, defect.key, defect.offset, defect.problem)
        for report in reports
        for defect in report.defects
    ]
    return VerifyResult(reports, spark.createDataFrame(rows, DEFECT_SCHEMA))
