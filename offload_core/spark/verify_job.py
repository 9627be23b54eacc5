"""The ``verify`` job: check every offloaded ledger in a store, in parallel.

Stage one plans each ledger on the executors (objects present, format
version, index decodes, data length matches); stage two checks every
block's framing against its index entry; the driver then combines each
ledger's blocks (entry ids contiguous, lengths add up to the metadata).
Nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..offload.inventory import OffloadedLedger, find_offloaded_ledgers
from ..offload.verify import (
    BlockOutcome,
    BlockTask,
    LedgerPlan,
    LedgerReport,
    plan_ledger,
    read_and_check_block,
    summarize_ledger,
)
from ..plugins import open_driver
from .progress import Progress, run_with_progress

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
    options: dict[str, Any] = dict(driver_options or {})
    driver = open_driver(url, **options)
    try:
        found = find_offloaded_ledgers(driver, prefix)
    finally:
        driver.close()
    if ledgers is not None:
        wanted = set(ledgers)
        found = [ledger for ledger in found if ledger.ledger_id in wanted]
    context = spark.sparkContext
    slots = max(1, context.defaultParallelism)

    def plan_all() -> list[LedgerPlan | LedgerReport]:
        if not found:
            return []
        rdd = context.parallelize(found, min(len(found), slots * 4))
        return rdd.mapPartitions(lambda part: _plan(url, options, part)).collect()  # type: ignore[no-any-return]

    planned = run_with_progress(spark, "verify: reading indexes", plan_all, progress)
    plans = [plan for plan in planned if isinstance(plan, LedgerPlan)]
    tasks = [task for plan in plans for task in plan.blocks]

    def check_all() -> list[BlockOutcome]:
        if not tasks:
            return []
        rdd = context.parallelize(tasks, min(len(tasks), slots * 8))
        return rdd.mapPartitions(lambda part: _check(url, options, part)).collect()  # type: ignore[no-any-return]

    outcomes = run_with_progress(spark, "verify: checking blocks", check_all, progress)
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


def _plan(url: str, options: dict[str, Any], ledgers: Iterator[OffloadedLedger]) -> Iterator[LedgerPlan | LedgerReport]:
    driver = open_driver(url, **options)
    try:
        for ledger in ledgers:
            yield plan_ledger(driver, ledger)
    finally:
        driver.close()


def _check(url: str, options: dict[str, Any], tasks: Iterator[BlockTask]) -> Iterator[BlockOutcome]:
    driver = open_driver(url, **options)
    try:
        for task in tasks:
            yield read_and_check_block(driver, task)
    finally:
        driver.close()
