"""Checking offloaded ledgers block by block, without trusting them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ..errors import FormatError, NotFoundError
from ..formats import pulsar_v1 as v1
from ..storage import StorageDriver
from .inventory import OffloadedLedger

__all__ = ["Defect", "LedgerReport", "check_block", "verify_ledger"]


@dataclass(frozen=True)
class Defect:
    """Something wrong with an offloaded ledger, and where."""

    ledger_id: int
    uuid: str
    key: str
    offset: int | None
    problem: str

    def location(self) -> str:
        where = f"{self.key}" + (f" at byte {self.offset}" if self.offset is not None else "")
        return f"ledger {self.ledger_id} ({where})"


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


def check_block(index: v1.Index, block: v1.IndexEntry, data: bytes) -> tuple[v1.Block | None, str | None]:
    """Decode one block's bytes and check them against the index entry.

    Returns the decoded block and ``None``, or ``None`` and the problem."""
    try:
        decoded = v1.decode_block(data)
    except FormatError as exc:
        return None, str(exc)
    if decoded.header.first_entry_id != block.first_entry_id:
        return None, (
            f"block {block.part_id} starts with entry {decoded.header.first_entry_id}, its index says "
            f"{block.first_entry_id}"
        )
    if not decoded.entries:
        return None, f"block {block.part_id} holds no entries"
    return decoded, None


def verify_ledger(
    driver: StorageDriver, ledger: OffloadedLedger, *, on_block: Callable[[int], None] | None = None
) -> LedgerReport:
    """Read every block of ``ledger`` and check framing, padding, that entry
    ids run contiguously from 0 to the last entry, that lengths add up to
    the ledger metadata, and the version metadata of both objects.

    Memory stays at one block. ``on_block(size)`` is called after each
    block (for progress bars)."""

    def found(key: str, offset: int | None, problem: str) -> Defect:
        return Defect(ledger.ledger_id, ledger.uuid, key, offset, problem)

    def failed(key: str, problem: str) -> LedgerReport:
        return LedgerReport(ledger, 0, 0, 0, (found(key, None, problem),))

    if ledger.index is None:
        return failed(ledger.index_key, "index object is missing")
    if ledger.data is None:
        return failed(ledger.data_key, "data object is missing")
    for key in (ledger.index_key, ledger.data_key):
        problem = _version_problem(driver, key)
        if problem:
            return failed(key, problem)
    try:
        index = v1.decode_index(driver.read(ledger.index_key))
        metadata = index.metadata()
    except FormatError as exc:
        return failed(ledger.index_key, f"index is corrupt: {exc}")
    except NotFoundError:
        return failed(ledger.index_key, "index object vanished while verifying")
    data_size = driver.stat(ledger.data_key).size
    if data_size != index.data_object_length:
        return failed(ledger.data_key, f"data object is {data_size} bytes, its index says {index.data_object_length}")
    defects: list[Defect] = []
    next_entry = entry_bytes = 0
    for block in index.entries:
        end = index.block_end(block)
        decoded, problem = check_block(index, block, driver.read(ledger.data_key, block.offset, end))
        if on_block is not None:
            on_block(end - block.offset)
        if decoded is None:
            defects.append(found(ledger.data_key, block.offset, problem or "unreadable block"))
            break
        if block.first_entry_id != next_entry:
            problem = f"block {block.part_id} starts at entry {block.first_entry_id}, expected {next_entry}"
            defects.append(found(ledger.data_key, block.offset, problem + " (entries missing or repeated)"))
            break
        next_entry = decoded.last_entry_id + 1
        entry_bytes += sum(len(payload) for _, payload in decoded.entries)
    if not defects and next_entry - 1 != metadata.lastEntryId:
        problem = f"blocks end at entry {next_entry - 1}, the ledger's last entry is {metadata.lastEntryId}"
        defects.append(found(ledger.data_key, None, problem))
    if not defects and entry_bytes != metadata.length:
        problem = f"entries hold {entry_bytes} bytes, the ledger metadata says {metadata.length}"
        defects.append(found(ledger.data_key, None, problem))
    return LedgerReport(ledger, len(index.entries), next_entry, entry_bytes, tuple(defects))


def _version_problem(driver: StorageDriver, key: str) -> str | None:
    metadata: Mapping[str, str] = driver.stat(key).metadata
    version = metadata.get(v1.FORMAT_VERSION_KEY)
    if version != v1.FORMAT_VERSION:
        return f"format version metadata is {version!r}, expected {v1.FORMAT_VERSION!r}"
    return None
