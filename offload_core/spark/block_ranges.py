"""The ``pulsar-offload`` source's block-range partitions: consecutive
blocks of one ledger in one data object (a PIP-17 ledger's, or a PIP-76
segment's run of one ledger), cut from the object's index. Pure: the index
is read by whoever calls (the planning on the Spark driver for a large
ledger, the task for a packed group of small ones)."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from ..errors import FormatError
from ..formats import pulsar_v1 as v1
from ..offload.reading.block_tables import index_entry_offsets
from .column_bounds import ANY_VALUE, ColumnBounds
from .packing import packed

__all__ = ["BlockRangePartition", "EntryRanges", "clipped", "grouped_blocks", "ledger_partitions", "overlaps"]

EntryRanges = tuple[tuple[int, int | None], ...]
"""Inclusive entry ranges of a ledger (``None`` for open-ended)."""


@dataclass(frozen=True)
class BlockRangePartition(InputPartition):
    """Consecutive blocks of one ledger's data object, and the entry ranges
    to keep from them (``last`` ``None`` for open-ended)."""

    ledger_id: int
    data_key: str
    blocks: tuple[tuple[int, int, int], ...]  # (offset, end, first entry id)
    entry_ranges: EntryRanges = ((0, None),)
    entry_bounds: ColumnBounds = ANY_VALUE
    streaming: bool = False  # blocks of a PIP-76 segment (one ledger's run in it)
    publish_time_bounds: ColumnBounds = ANY_VALUE  # microseconds since the epoch
    # Per block, its entries' payload lengths (big-endian uint32s) from the
    # index's entry-offsets section, when it has one: a task then finds the
    # entries without walking their headers (it still checks every one).
    entry_lengths: tuple[bytes | None, ...] = ()
    last_entry: int | None = None  # the last block's last entry, when planning knew it

    def covered(self) -> tuple[int, int | None]:
        """The first and last (``None``: open-ended) entry this partition reads."""
        return clipped(self.blocks[0][2], self.last_entry, self.entry_ranges)

    def wants(self, entry_id: int) -> bool:
        in_range = any(first <= entry_id and (last is None or entry_id <= last) for first, last in self.entry_ranges)
        return in_range and self.entry_bounds.admits(entry_id)


def ledger_partitions(
    ledger_id: int,
    data_key: str,
    index: v1.Index,
    ranges: EntryRanges,
    *,
    entry_bounds: ColumnBounds = ANY_VALUE,
    publish_time_bounds: ColumnBounds = ANY_VALUE,
    blocks_per_partition: int | None = None,
    bytes_per_partition: int | None = None,
) -> list[BlockRangePartition]:
    """The partitions reading entries ``ranges`` and ``entry_bounds`` admit
    of a PIP-17 ledger whose index is ``index``: its blocks holding such
    entries, grouped by :func:`grouped_blocks` (all in one partition when
    neither limit is given)."""
    lengths = _block_lengths(index)
    lasts = dict(zip((entry.first_entry_id for entry in index.entries), _block_lasts(index), strict=True))
    blocks = [
        (entry.offset, index.block_end(entry), entry.first_entry_id)
        for entry, last in zip(index.entries, _block_lasts(index), strict=True)
        if overlaps(entry.first_entry_id, last, ranges) and entry_bounds.overlaps(entry.first_entry_id, last)
    ]
    return [
        BlockRangePartition(ledger_id, data_key, group, ranges, entry_bounds, publish_time_bounds=publish_time_bounds,
                            entry_lengths=tuple(lengths.get(first) for _, _, first in group),
                            last_entry=lasts[group[-1][2]])
        for group in grouped_blocks(blocks, blocks_per_partition, bytes_per_partition)
    ]  # fmt: skip


def grouped_blocks(
    blocks: Sequence[tuple[int, int, int]], blocks_per_partition: int | None, bytes_per_partition: int | None
) -> Iterator[tuple[tuple[int, int, int], ...]]:
    """Consecutive ``(offset, end, first entry)`` blocks, grouped into the
    partitions' runs: ``blocks_per_partition`` blocks each when given, else
    as many as fit ``bytes_per_partition`` (one at least), else all."""
    if blocks_per_partition is not None:
        step = blocks_per_partition
        yield from (tuple(blocks[first : first + step]) for first in range(0, len(blocks), step))
        return
    budget = (2**63 if bytes_per_partition is None else bytes_per_partition,)
    yield from (tuple(group) for group in packed(blocks, budget, lambda block: (block[1] - block[0],)))


def clipped(first: int, last: int | None, ranges: EntryRanges) -> tuple[int, int | None]:
    """Entries ``first`` to ``last`` (``None``: open-ended) narrowed to the
    span of ``ranges``."""
    low = max(first, min(start for start, _ in ranges))
    ends = [end for _, end in ranges]
    high = None if None in ends else max(end for end in ends if end is not None)
    if last is not None:
        high = last if high is None else min(high, last)
    return low, high


def _block_lengths(index: v1.Index) -> dict[int, bytes]:
    """Each block's entry lengths (big-endian uint32s) by its first entry
    id, from the index's entry-offsets section; none when it has no sound
    one (the tasks walk the entry headers then, as for Pulsar's objects)."""
    try:
        offsets = index_entry_offsets(index)
    except FormatError:
        return {}
    if offsets is None:
        return {}
    every = array("I", offsets.lengths)
    if sys.byteorder == "little":
        every.byteswap()
    big_endian = every.tobytes()
    starts = offsets.starts
    return {
        entry.first_entry_id: big_endian[4 * starts[number] : 4 * starts[number + 1]]
        for number, entry in enumerate(index.entries)
    }


def _block_lasts(index: v1.Index) -> list[int]:
    """Each block's last entry id: the next block's first minus one, and the
    ledger's last entry for the final block."""
    return [entry.first_entry_id - 1 for entry in index.entries[1:]] + [index.last_entry_id]


def overlaps(first: int, last: int | None, ranges: EntryRanges) -> bool:
    """Whether entries ``first`` to ``last`` (``None``: open-ended) meet any of ``ranges``."""
    return any((last is None or start <= last) and (end is None or first <= end) for start, end in ranges)
