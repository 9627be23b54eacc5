"""Checking offloaded ledgers block by block, without trusting them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ...errors import FormatError, NotFoundError, OffloadError
from ...formats import pulsar_v1 as v1
from ...storage import StorageDriver
from .inventory import OffloadedLedger

__all__ = [
    "BlockOutcome",
    "BlockTask",
    "Defect",
    "LedgerPlan",
    "LedgerReport",
    "check_block",
    "plan_ledger",
    "read_and_check_block",
    "summarize_ledger",
    "verify_ledger",
]


@dataclass(frozen=True)
class Defect:
    """Something wrong with an offload, and where: ``ledger_id`` ``None``
    when it is not one ledger's (a segment's index, say)."""

    ledger_id: int | None
    uuid: str
    key: str
    offset: int | None
    problem: str

    def location(self) -> str:
        where = f"{self.key}" + (f" at byte {self.offset}" if self.offset is not None else "")
        return f"ledger {self.ledger_id} ({where})" if self.ledger_id is not None else where


@dataclass(frozen=True)
class LedgerReport:
    """What verifying one ledger found."""

    ledger: OffloadedLedger
    blocks: int
    entries: int
    entry_bytes: int
    defects: tuple[Defect, ...]

    @property
    def ok(self) -> bool:
        return not self.defects


@dataclass(frozen=True)
class BlockTask:
    """One block to check: small and picklable, so it can run anywhere."""

    ledger_id: int
    uuid: str
    data_key: str
    part_id: int
    offset: int
    end: int
    first_entry_id: int


@dataclass(frozen=True)
class BlockOutcome:
    """What checking one block found: its entries, or the problem."""

    task: BlockTask
    last_entry_id: int
    entries: int
    entry_bytes: int
    problem: str | None


@dataclass(frozen=True)
class LedgerPlan:
    """A ledger whose objects and index passed the ledger-level checks, with
    what its blocks must add up to."""

    ledger: OffloadedLedger
    last_entry_id: int
    length: int
    blocks: tuple[BlockTask, ...]


def check_block(task: BlockTask, data: bytes) -> BlockOutcome:
    """Decode one block's bytes and check them against its index entry. A
    damaged block still reports the entries before the damage (its
    ``last_entry_id``), so a summary can say which entries are recoverable."""

    def failed(problem: str) -> BlockOutcome:
        intact, size = _intact_prefix(task, data)
        return BlockOutcome(task, task.first_entry_id + intact - 1, intact, size, problem)

    if len(data) < v1.BLOCK_HEADER_LENGTH:
        return BlockOutcome(task, task.first_entry_id - 1, 0, 0,
                            f"block {task.part_id} is cut short: {len(data)} bytes, less than its header")  # fmt: skip
    try:
        decoded = v1.decode_block(data)
    except FormatError as exc:
        return failed(str(exc))
    if decoded.header.first_entry_id != task.first_entry_id:
        return BlockOutcome(task, task.first_entry_id - 1, 0, 0,
                            f"block {task.part_id} starts with entry {decoded.header.first_entry_id}, its index says "
                            f"{task.first_entry_id}")  # fmt: skip
    if not decoded.entries:
        return failed(f"block {task.part_id} holds no entries")
    size = sum(len(payload) for _, payload in decoded.entries)
    return BlockOutcome(task, decoded.last_entry_id, len(decoded.entries), size, None)


def _intact_prefix(task: BlockTask, data: bytes) -> tuple[int, int]:
    """How many entries (and payload bytes) at the start of a damaged block
    are framed whole, after a valid header."""
    try:
        header = v1.decode_block_header(data)
    except FormatError:
        return 0, 0
    if header.first_entry_id != task.first_entry_id:
        return 0, 0
    position, count, size, last_length = v1.BLOCK_HEADER_LENGTH, 0, 0, 0
    while True:
        try:
            length = v1.read_entry_header(data, position, end=len(data), expected_id=task.first_entry_id + count)
        except FormatError as exc:
            if count and str(exc).startswith("found entry id"):
                return count - 1, size - last_length  # the previous entry's length led to garbage
            return count, size  # the entry here is the broken one
        if length is None:
            if count and data[position:] != v1.padding(len(data) - position):
                # What follows the last entry is neither an entry nor padding:
                # that entry's own length is what broke the framing.
                return count - 1, size - last_length
            return count, size
        position += v1.ENTRY_HEADER_LENGTH + length
        count, size, last_length = count + 1, size + length, length


def read_and_check_block(driver: StorageDriver, task: BlockTask) -> BlockOutcome:
    """Read one block from the store and check it; a block that cannot be
    read (the object vanished, the range is past its end, the store keeps
    failing) is a problem too, reported rather than raised."""
    if task.end <= task.offset:
        problem = f"block {task.part_id} at offset {task.offset} lies past the end of the data object"
        return BlockOutcome(task, task.first_entry_id - 1, 0, 0, problem)
    try:
        data = driver.read(task.data_key, task.offset, task.end)
    except OffloadError as exc:
        return BlockOutcome(task, -1, 0, 0, f"block {task.part_id} cannot be read: {exc}")
    return check_block(task, data)


DEFAULT_BLOCK_LIMIT = 128 * 2**20
DEFAULT_INDEX_LIMIT = 16 * 2**20


def plan_ledger(
    driver: StorageDriver,
    ledger: OffloadedLedger,
    *,
    block_limit: int = DEFAULT_BLOCK_LIMIT,
    index_limit: int = DEFAULT_INDEX_LIMIT,
) -> LedgerPlan | LedgerReport:
    """Check what is ledger-wide (both objects present, their format
    version, the index's size is plausible and it decodes, the data
    object's length matches it, no block is over ``block_limit`` bytes) and
    list the blocks to check. Returns a report with the defect if a check
    failed, since then the blocks cannot be located. Memory stays bounded
    by the limits whatever the objects claim; store errors are defects
    too, so a scan goes on past them."""

    def failed(key: str, problem: str) -> LedgerReport:
        return LedgerReport(ledger, 0, 0, 0, (Defect(ledger.ledger_id, ledger.uuid, key, None, problem),))

    if ledger.index is None:
        return failed(ledger.index_key, "index object is missing")
    if ledger.data is None:
        return failed(ledger.data_key, "data object is missing")
    try:
        stats = {key: driver.stat(key) for key in (ledger.index_key, ledger.data_key)}
        for key, info in stats.items():
            problem = v1.format_version_problem(info.metadata)
            if problem:
                return failed(key, problem)
        data_size = stats[ledger.data_key].size
        v1.check_index_size(stats[ledger.index_key].size, data_size, limit=index_limit)
        index = v1.decode_index(driver.read(ledger.index_key))
        metadata = index.metadata()
        v1.check_block_spans(index, block_limit)
    except FormatError as exc:
        return failed(ledger.index_key, f"index is corrupt: {exc}")
    except NotFoundError as exc:
        return failed(exc.key or ledger.index_key, "object vanished while verifying")
    except OffloadError as exc:
        return failed(ledger.index_key, f"could not be read: {type(exc).__name__}: {exc}")
    # A data object shorter than its index (a lost tail) or an index that
    # ends inside its last block (Pulsar's, after an entry larger than a
    # block) still has blocks worth checking: each is read as far as the
    # object goes, and the summary says which entries are recoverable.
    end = min(data_size, index.data_object_length)
    blocks = tuple(
        BlockTask(ledger.ledger_id, ledger.uuid, ledger.data_key, block.part_id, block.offset,
                  max(block.offset, min(index.block_end(block), end)), block.first_entry_id)
        for block in index.entries
    )  # fmt: skip
    return LedgerPlan(ledger, metadata.lastEntryId, metadata.length, blocks)


def summarize_ledger(plan: LedgerPlan, outcomes: Iterable[BlockOutcome]) -> LedgerReport:
    """Combine a ledger's block outcomes (in any order): every unreadable
    block is a defect; entry ids must run contiguously from 0 to the
    ledger's last entry and lengths add up to the ledger metadata."""
    ledger = plan.ledger
    ordered = sorted(outcomes, key=lambda outcome: outcome.task.offset)

    def found(offset: int | None, problem: str) -> Defect:
        return Defect(ledger.ledger_id, ledger.uuid, ledger.data_key, offset, problem)

    defects = [found(o.task.offset, o.problem) for o in ordered if o.problem is not None]
    if len(ordered) != len(plan.blocks):
        defects.append(found(None, f"{len(ordered)} of the index's {len(plan.blocks)} blocks were checked"))
    if defects:
        recoverable = _recoverable_through(ordered)
        defects.append(found(None, _recovery_summary(recoverable, plan.last_entry_id)))
    entries = sum(outcome.entries for outcome in ordered)
    entry_bytes = sum(outcome.entry_bytes for outcome in ordered)
    if not defects:
        next_entry = 0
        for outcome in ordered:
            task = outcome.task
            if task.first_entry_id != next_entry:
                problem = f"block {task.part_id} starts at entry {task.first_entry_id}, expected {next_entry}"
                defects.append(found(task.offset, problem + " (entries missing or repeated)"))
                break
            next_entry = outcome.last_entry_id + 1
        else:
            if next_entry - 1 != plan.last_entry_id:
                problem = f"blocks end at entry {next_entry - 1}, the ledger's last entry is {plan.last_entry_id}"
                defects.append(found(None, problem))
            elif entry_bytes != plan.length:
                defects.append(found(None, f"entries hold {entry_bytes} bytes, the ledger metadata says {plan.length}"))
    return LedgerReport(ledger, len(ordered), entries, entry_bytes, tuple(defects))


def _recoverable_through(ordered: list[BlockOutcome]) -> int:
    """The last entry of the unbroken run of intact entries from entry 0."""
    next_entry = 0
    for outcome in ordered:
        if outcome.task.first_entry_id != next_entry or outcome.entries == 0:
            break
        next_entry = outcome.last_entry_id + 1
        if outcome.problem is not None:
            break
    return next_entry - 1


def _recovery_summary(recoverable: int, last_entry_id: int) -> str:
    kept = f"recoverable entries 0..{recoverable}" if recoverable >= 0 else "no entry is recoverable"
    lost = f"lost {recoverable + 1}..{last_entry_id}" if last_entry_id > recoverable else "none lost from the end"
    return f"{kept}, {lost}"


def verify_ledger(
    driver: StorageDriver,
    ledger: OffloadedLedger,
    *,
    on_block: Callable[[int], None] | None = None,
    block_limit: int = DEFAULT_BLOCK_LIMIT,
) -> LedgerReport:
    """Read every block of ``ledger`` and check framing, padding, that entry
    ids run contiguously from 0 to the last entry, that lengths add up to
    the ledger metadata, and the version metadata of both objects.

    Memory stays at one block. ``on_block(size)`` is called after each
    block (for progress bars)."""
    plan = plan_ledger(driver, ledger, block_limit=block_limit)
    if isinstance(plan, LedgerReport):
        return plan
    outcomes = []
    for task in plan.blocks:
        outcomes.append(read_and_check_block(driver, task))
        if on_block is not None:
            on_block(task.end - task.offset)
    return summarize_ledger(plan, outcomes)
