"""Pulsar's v2 (PIP-76) segments as a kind of stored offload: ``{uuid}``
and ``{uuid}-index``, and the ``{uuid}-entry-offsets`` object of segments
written before the entry offsets moved into the data object."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...errors import FormatError, OffloadError
from ...formats import pulsar_v2 as v2
from ...retry import RetryPolicy
from ...storage import StorageDriver
from ..ledgers.verify import DEFAULT_BLOCK_LIMIT, DEFAULT_INDEX_LIMIT, Defect
from ..segments.segment_inventory import StoredSegment, find_segments
from ..segments.segment_verify import (
    SegmentBlockOutcome,
    SegmentBlockTask,
    SegmentPlan,
    check_segment_block,
    plan_segment,
    summarize_segment,
)
from .kinds import OffloadPlan, OffloadReport, StoredOffload

__all__ = ["PULSAR_SEGMENTS", "PulsarSegments"]

# Each read is tried once, as the v1 verify does: a store error is reported as a defect and the scan goes on.
_NO_RETRY = RetryPolicy(attempts=1)


class PulsarSegments:
    """The :class:`~.kinds.StoredKind` of v2 segments. A segment's age is
    the newest close time of the ledgers it holds, as its index records
    them; unknown while one of them was still open when it was written
    (Pulsar's index records no other time)."""

    name = "pulsar-segment"

    def find(self, driver: StorageDriver, prefix: str) -> Sequence[StoredOffload]:
        return [_stored(self.name, segment) for segment in find_segments(driver, prefix)]

    def describe(self, driver: StorageDriver, offload: StoredOffload) -> StoredOffload:
        segment: StoredSegment = offload.detail
        if segment.index is None:
            return offload
        try:
            index = v2.decode_index(driver.read(segment.index.key))
            closed = [int(section.info().timestamp) for section in index.ledgers]
        except (FormatError, OffloadError):
            return offload
        created = max(closed) if all(closed) else None
        return _with_ledgers(offload, index.ledger_ids, created)

    def plan(self, driver: StorageDriver, offload: StoredOffload) -> OffloadPlan | OffloadReport:
        planned = plan_segment(driver, offload.detail, max_index_size=DEFAULT_INDEX_LIMIT,
                               block_limit=DEFAULT_BLOCK_LIMIT, retry=_NO_RETRY)  # fmt: skip
        if not isinstance(planned, SegmentPlan):
            defect = Defect(None, offload.uuid, planned.key, None, planned.problem)
            return OffloadReport(offload, 0, 0, 0, (defect,))
        return OffloadPlan(_with_ledgers(offload, planned.ledger_ids, offload.created_ms), planned.blocks, planned)

    def check(self, driver: StorageDriver, task: SegmentBlockTask) -> SegmentBlockOutcome:
        return check_segment_block(driver, task)

    def summarize(self, plan: OffloadPlan, outcomes: Sequence[SegmentBlockOutcome]) -> OffloadReport:
        detail: SegmentPlan = plan.detail
        blocks, entries, entry_bytes, problems = summarize_segment(detail, outcomes)
        defects = tuple(Defect(ledger_id, plan.offload.uuid, detail.data_key, offset, problem)
                        for ledger_id, offset, problem in problems)  # fmt: skip
        return OffloadReport(plan.offload, blocks, entries, entry_bytes, defects)

    def delete(self, driver: StorageDriver, offload: StoredOffload) -> None:
        segment: StoredSegment = offload.detail
        # The index last: an interrupted run leaves it, and the next run finds the segment by it.
        keys = [key(segment.uuid) for key in (v2.segment_data_key, v2.segment_entry_offsets_key, v2.segment_index_key)]
        for key in keys:
            driver.delete(segment.prefix + key)


def _stored(kind: str, segment: StoredSegment) -> StoredOffload:
    present = [info for info in (segment.data, segment.index, segment.entry_offsets) if info is not None]
    keys, size = tuple(info.key for info in present), sum(info.size for info in present)
    return StoredOffload(kind, segment.uuid, (), keys, size, segment.complete, f"segment {segment.uuid}", segment)


def _with_ledgers(offload: StoredOffload, ledger_ids: tuple[int, ...], created_ms: int | None) -> StoredOffload:
    held = ", ".join(map(str, ledger_ids))
    return replace(offload, ledger_ids=ledger_ids, created_ms=created_ms,
                   label=f"segment {offload.uuid} (ledger{'s' if len(ledger_ids) > 1 else ''} {held})")  # fmt: skip


PULSAR_SEGMENTS = PulsarSegments()
