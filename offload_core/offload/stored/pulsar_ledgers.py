"""Pulsar's v1 (PIP-17) ledger objects as a kind of stored offload:
``{uuid}-ledger-{id}`` and its ``-index``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...storage import StorageDriver
from ..ledgers.inventory import OffloadedLedger, find_offloaded_ledgers
from ..ledgers.retention import ledger_ctime_ms
from ..ledgers.verify import (
    BlockOutcome,
    BlockTask,
    LedgerPlan,
    LedgerReport,
    plan_ledger,
    read_and_check_block,
    summarize_ledger,
)
from .kinds import OffloadPlan, OffloadReport, StoredOffload

__all__ = ["PULSAR_LEDGERS", "PulsarLedgers"]


class PulsarLedgers:
    """The :class:`~.kinds.StoredKind` of v1 ledger objects."""

    name = "pulsar-ledger"

    def stored(self, ledger: OffloadedLedger, created_ms: int | None = None) -> StoredOffload:
        """``ledger`` as a stored offload."""
        present = [(info, key) for info, key in ((ledger.data, ledger.data_key), (ledger.index, ledger.index_key))
                   if info is not None]  # fmt: skip
        return StoredOffload(self.name, ledger.uuid, (ledger.ledger_id,), tuple(key for _, key in present),
                             sum(info.size for info, _ in present), ledger.complete, f"ledger {ledger.ledger_id}",
                             ledger, created_ms)  # fmt: skip

    def find(self, driver: StorageDriver, prefix: str) -> Sequence[StoredOffload]:
        return [self.stored(ledger) for ledger in find_offloaded_ledgers(driver, prefix)]

    def describe(self, driver: StorageDriver, offload: StoredOffload) -> StoredOffload:
        return replace(offload, created_ms=ledger_ctime_ms(driver, offload.detail))

    def plan(self, driver: StorageDriver, offload: StoredOffload) -> OffloadPlan | OffloadReport:
        planned = plan_ledger(driver, offload.detail)
        if isinstance(planned, LedgerReport):
            return _report(offload, planned)
        return OffloadPlan(offload, planned.blocks, planned)

    def check(self, driver: StorageDriver, task: BlockTask) -> BlockOutcome:
        return read_and_check_block(driver, task)

    def summarize(self, plan: OffloadPlan, outcomes: Sequence[BlockOutcome]) -> OffloadReport:
        detail: LedgerPlan = plan.detail
        return _report(plan.offload, summarize_ledger(detail, outcomes))

    def delete(self, driver: StorageDriver, offload: StoredOffload) -> None:
        ledger: OffloadedLedger = offload.detail
        # The data object first: an interrupted run leaves the index, which the next run still finds.
        driver.delete(ledger.data_key)
        driver.delete(ledger.index_key)


def _report(offload: StoredOffload, report: LedgerReport) -> OffloadReport:
    return OffloadReport(offload, report.blocks, report.entries, report.entry_bytes, report.defects)


PULSAR_LEDGERS = PulsarLedgers()
