"""Where a ledger's entries sit in an offloaded data object: the block
table of a v1 ledger object, or of one ledger's run inside a v2 segment.
The offloaded read handle walks either the same way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from ...errors import FormatError, InvalidRangeError
from ...formats import entry_offsets
from ...formats import pulsar_v1 as v1
from ...formats import pulsar_v2 as v2
from ...formats.entry_offsets import EntryOffsets

__all__ = ["BlockRow", "BlockTable", "SegmentLedgerTable", "V1BlockTable", "check_entry_offsets", "index_entry_offsets"]

BlockRow = v1.IndexEntry
"""One block's index row; v1 indexes and v2 segment indexes share it."""

H = TypeVar("H")


class BlockTable(Protocol):
    """A ledger's blocks in one data object.

    ``lookup`` raises :class:`InvalidRangeError` for an entry the object
    does not hold; ``check_header`` raises :class:`FormatError` naming the
    block (the caller adds the object and offset) when a block's 128 header
    bytes do not decode or do not match its row."""

    @property
    def data_object_length(self) -> int: ...

    @property
    def block_starts(self) -> frozenset[int]: ...

    def lookup(self, entry_id: int) -> BlockRow: ...

    def block_end(self, row: BlockRow) -> int: ...

    def block_entries(self, row: BlockRow) -> tuple[int, int]: ...

    def check_header(self, header: memoryview, row: BlockRow) -> None: ...


class V1BlockTable:
    """The blocks of a v1 ledger object, from its index."""

    def __init__(self, index: v1.Index) -> None:
        self.index = index
        self.data_object_length = index.data_object_length
        self.block_starts = frozenset(entry.first_entry_id for entry in index.entries)

    def lookup(self, entry_id: int) -> v1.IndexEntry:
        return self.index.lookup(entry_id)

    def block_end(self, row: BlockRow) -> int:
        return self.index.block_end(row)

    def block_entries(self, row: BlockRow) -> tuple[int, int]:
        return self.index.block_entries(row)

    def check_header(self, header: memoryview, row: BlockRow) -> None:
        decoded = _decoded(v1.decode_block_header, header, row)
        _check_against_row(decoded.block_length, decoded.first_entry_id, self.block_end(row) - row.offset, row)


class SegmentLedgerTable:
    """The blocks of ledger ``ledger_id`` inside a v2 segment whose last
    entry of that ledger is ``last_entry_id``."""

    def __init__(self, index: v2.SegmentIndex, ledger_id: int, last_entry_id: int) -> None:
        self.index = index
        self.ledger_id = ledger_id
        self.section = index.section(ledger_id)
        self.first_entry_id = self.section.first_entry_id
        if last_entry_id < self.section.rows[-1].first_entry_id:
            raise FormatError(
                f"ledger {ledger_id} is said to end at entry {last_entry_id} in the segment, before its last block "
                f"starts (entry {self.section.rows[-1].first_entry_id})"
            )
        self.last_entry_id = last_entry_id
        self.data_object_length = index.data_object_length
        self.block_starts = frozenset(row.first_entry_id for row in self.section.rows)

    def lookup(self, entry_id: int) -> v2.SegmentRow:
        if not self.first_entry_id <= entry_id <= self.last_entry_id:
            raise InvalidRangeError(
                f"segment holds entries {self.first_entry_id}..{self.last_entry_id} of ledger {self.ledger_id}, "
                f"not {entry_id}"
            )
        return self.section.lookup(entry_id)

    def block_end(self, row: BlockRow) -> int:
        return self.index.block_end(row)

    def block_entries(self, row: BlockRow) -> tuple[int, int]:
        following = self.index.next_block_of_ledger(self.ledger_id, row)
        return row.first_entry_id, (self.last_entry_id if following is None else following.first_entry_id - 1)

    def check_header(self, header: memoryview, row: BlockRow) -> None:
        decoded = _decoded(v2.decode_block_header, header, row)
        if decoded.header_length != row.data_offset - row.offset:
            raise FormatError(f"block {row.part_id} header says it is {decoded.header_length} bytes, the index "
                              f"{row.data_offset - row.offset}")  # fmt: skip
        if decoded.ledger_id != self.ledger_id:
            raise FormatError(f"block {row.part_id} header is of ledger {decoded.ledger_id}, its index row of "
                              f"{self.ledger_id}")  # fmt: skip
        _check_against_row(decoded.block_length, decoded.first_entry_id, self.block_end(row) - row.offset, row)


def _check_against_row(block_length: int, first_entry_id: int, expected_length: int, row: BlockRow) -> None:
    if block_length != expected_length:
        raise FormatError(f"block {row.part_id} header says {block_length} bytes, its index row {expected_length}")
    if first_entry_id != row.first_entry_id:
        raise FormatError(
            f"block {row.part_id} header starts at entry {first_entry_id}, its index row at {row.first_entry_id}"
        )


def _decoded(decode: Callable[[memoryview], H], header: memoryview, row: BlockRow) -> H:
    try:
        return decode(header)
    except FormatError as exc:
        raise FormatError(f"block {row.part_id}: {exc}") from None


def check_entry_offsets(
    offsets: EntryOffsets, table: BlockTable, rows: Sequence[BlockRow], *, blocks: int | None = None
) -> None:
    """Raise :class:`FormatError` unless ``offsets`` (one list of lengths
    per block of the object, in part order: ``blocks`` of them, by default
    as many as ``rows``) gives each of ``rows`` the number of entries the
    table says it holds, framed within the block."""
    expected_blocks = len(rows) if blocks is None else blocks
    if offsets.block_count != expected_blocks:
        raise FormatError(f"entry offsets cover {offsets.block_count} blocks, the object has {expected_blocks}")
    for row in rows:
        number = row.part_id - 1
        first, last = table.block_entries(row)
        if offsets.entry_count(number) != last - first + 1:
            raise FormatError(
                f"entry offsets give block {row.part_id} {offsets.entry_count(number)} entries, its index "
                f"{last - first + 1}"
            )
        if offsets.content_length(number) > table.block_end(row) - row.data_offset:
            raise FormatError(f"entry offsets of block {row.part_id} run past the block")


def index_entry_offsets(index: v1.Index) -> EntryOffsets | None:
    """The entry-offsets section after a v1 index's block table, checked
    against that table; ``None`` when the index has none (every
    Pulsar-written object). Raises :class:`FormatError` for a section that
    is damaged or does not fit the table."""
    if not entry_offsets.is_section(index.trailer):
        return None
    section = entry_offsets.decode_section(index.trailer)
    check_entry_offsets(section, V1BlockTable(index), index.entries)
    return section
