"""Checking PIP-76 segments block by block, without trusting them: the
segment-wide checks (both objects, format version, index, lengths), then
each block (header against its index row, framing, padding), then per
ledger, entry ids running on from block to block."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...errors import FormatError, NotFoundError, OffloadError
from ...formats import pulsar_v2 as v2
from ...retry import RetryPolicy
from ...storage import StorageDriver
from .segment_inventory import StoredSegment
from .segment_reads import open_segment

__all__ = [
    "SegmentBlockOutcome",
    "SegmentBlockTask",
    "SegmentPlan",
    "SegmentProblem",
    "check_segment_block",
    "plan_segment",
    "summarize_segment",
]


@dataclass(frozen=True)
class SegmentBlockTask:
    """One block of a segment to check: small and picklable."""

    uuid: str
    data_key: str
    ledger_id: int
    part_id: int
    offset: int
    end: int
    first_entry_id: int
    header_length: int


@dataclass(frozen=True)
class SegmentBlockOutcome:
    """What checking one block found: its entries, or the problem."""

    task: SegmentBlockTask
    last_entry_id: int
    entries: int
    entry_bytes: int
    problem: str | None


@dataclass(frozen=True)
class SegmentPlan:
    """A segment whose segment-wide checks passed: its ledgers (in
    data-object order) and blocks."""

    uuid: str
    data_key: str
    ledger_ids: tuple[int, ...]
    blocks: tuple[SegmentBlockTask, ...]


@dataclass(frozen=True)
class SegmentProblem:
    """Why a segment's blocks cannot be located: the object and what."""

    key: str
    problem: str


def plan_segment(
    driver: StorageDriver, segment: StoredSegment, *, max_index_size: int, block_limit: int, retry: RetryPolicy
) -> SegmentPlan | SegmentProblem:
    """Check what is segment-wide (both objects present, their format
    version, the index's size is plausible and it decodes, the data object
    is as long as the index says, no block is over ``block_limit`` bytes)
    and list the blocks to check. Store errors are problems too, so a scan
    goes on past them."""
    data_key = segment.prefix + v2.segment_data_key(segment.uuid)
    index_key = segment.prefix + v2.segment_index_key(segment.uuid)
    if segment.index is None:
        return SegmentProblem(index_key, "index object is missing")
    if segment.data is None:
        return SegmentProblem(data_key, "data object is missing")
    try:
        opened = open_segment(driver, segment.uuid, prefix=segment.prefix, max_index_size=max_index_size,
                              block_limit=block_limit, retry=retry)  # fmt: skip
    except FormatError as exc:
        return SegmentProblem(index_key, f"segment is corrupt: {exc}")
    except NotFoundError as exc:
        return SegmentProblem(exc.key or index_key, "object vanished while verifying")
    except OffloadError as exc:
        return SegmentProblem(index_key, f"could not be read: {type(exc).__name__}: {exc}")
    index = opened.index
    blocks = tuple(
        SegmentBlockTask(segment.uuid, data_key, ledger_id, row.part_id, row.offset, index.block_end(row),
                         row.first_entry_id, row.data_offset - row.offset)
        for ledger_id, row in index.blocks
    )  # fmt: skip
    return SegmentPlan(segment.uuid, data_key, index.ledger_ids, blocks)


def check_segment_block(driver: StorageDriver, task: SegmentBlockTask) -> SegmentBlockOutcome:
    """Read one block and check it against its index row; a block that
    cannot be read is a problem too, reported rather than raised."""

    def failed(problem: str) -> SegmentBlockOutcome:
        return SegmentBlockOutcome(task, task.first_entry_id - 1, 0, 0, f"block {task.part_id}: {problem}")

    try:
        data = driver.read(task.data_key, task.offset, task.end)
    except OffloadError as exc:
        return failed(f"cannot be read: {exc}")
    try:
        header = v2.decode_block_header(data)
        found = (header.ledger_id, header.first_entry_id, header.header_length)
        expected = (task.ledger_id, task.first_entry_id, task.header_length)
        if found != expected:
            return failed(
                f"header says ledger {found[0]} from entry {found[1]} after a {found[2]}-byte header; the index "
                f"says ledger {expected[0]} from entry {expected[1]} after {expected[2]}"
            )
        block = v2.decode_block(data)
    except FormatError as exc:
        return failed(str(exc))
    size = sum(len(payload) for _, payload in block.entries)
    return SegmentBlockOutcome(task, block.last_entry_id, len(block.entries), size, None)


def summarize_segment(
    plan: SegmentPlan, outcomes: Iterable[SegmentBlockOutcome]
) -> tuple[int, int, int, list[tuple[int | None, int | None, str]]]:
    """Combine a segment's block outcomes (in any order): blocks, entries,
    payload bytes, and the problems as ``(ledger id, byte offset, what)``.
    Every block must have been checked and be intact, and each ledger's
    intact blocks must run on from one another's last entry."""
    ordered = sorted(outcomes, key=lambda outcome: outcome.task.offset)
    problems: list[tuple[int | None, int | None, str]] = [
        (o.task.ledger_id, o.task.offset, o.problem) for o in ordered if o.problem is not None
    ]
    if len(ordered) != len(plan.blocks):
        problems.append((None, None, f"{len(ordered)} of the index's {len(plan.blocks)} blocks were checked"))
    next_entry: dict[int, int | None] = {}  # None: after a damaged block, where the next one starts is unknown
    for outcome in ordered:
        task = outcome.task
        expected = next_entry.get(task.ledger_id)
        if outcome.problem is None and expected is not None and task.first_entry_id != expected:
            problems.append((task.ledger_id, task.offset, f"block {task.part_id} starts at entry "
                             f"{task.first_entry_id}, expected {expected} (entries missing or repeated)"))  # fmt: skip
        next_entry[task.ledger_id] = None if outcome.problem is not None else outcome.last_entry_id + 1
    entries = sum(outcome.entries for outcome in ordered)
    entry_bytes = sum(outcome.entry_bytes for outcome in ordered)
    return len(ordered), entries, entry_bytes, problems
