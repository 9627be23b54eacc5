"""Block-range partitions packed into one ``pulsar-offload`` partition:
the runs of small PIP-76 segments (a segment holds a few blocks of each of
its ledgers), which the planning cuts on the Spark driver from the
segments' indexes, would otherwise be a task each. Packed as Spark packs
small files (each run counted as its bytes plus
:data:`~offload_core.spark.read_options.OPEN_COST_BYTES`, up to
``bytesPerPartition``) and held as a few bytes objects: a run's object key
and its integers (ledger, blocks, entry ranges), not a dataclass each, the
integers as int64s compressed (zlib, its fastest level): mostly zero bytes
and repeats, they were some 70 bytes of the 100 a one-block run pickled to."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from .block_ranges import BlockRangePartition
from .column_bounds import ANY_VALUE, ColumnBounds
from .ledger_groups import PackedKeys
from .packing import packed
from .read_options import OPEN_COST_BYTES

__all__ = ["PackedRunsPartition", "packed_runs"]

_OPEN = -1  # an open-ended entry range's end, packed
_INT = struct.Struct("<q")


@dataclass(frozen=True)
class PackedRunsPartition(InputPartition):
    """Runs of blocks read in one task, in order: each run's data object
    key, and its ledger id, blocks and entry ranges as little-endian
    int64s (``ledger, last entry or -1, blocks, ranges, (offset, end,
    first) * blocks, (first, last or -1) * ranges``), zlib-compressed, with
    one set of pushed-down bounds. The planning packs segments' runs
    (``streaming``)."""

    data_keys: PackedKeys
    numbers: bytes
    streaming: bool
    entry_bounds: ColumnBounds = ANY_VALUE
    publish_time_bounds: ColumnBounds = ANY_VALUE

    def runs(self) -> Iterator[BlockRangePartition]:
        """The block-range partition of each run, as planned."""
        numbers = [value for (value,) in _INT.iter_unpack(zlib.decompress(self.numbers))]
        at = 0
        for data_key in self.data_keys:
            ledger_id, last_entry, block_count, range_count = numbers[at : at + 4]
            at += 4
            flat = numbers[at : at + 3 * block_count]
            at += 3 * block_count
            blocks = tuple(zip(flat[0::3], flat[1::3], flat[2::3], strict=True))
            bounds = numbers[at : at + 2 * range_count]
            at += 2 * range_count
            ranges = tuple((first, None if last == _OPEN else last) for first, last in zip(bounds[0::2], bounds[1::2],
                                                                                             strict=True))  # fmt: skip
            yield BlockRangePartition(ledger_id, data_key, blocks, ranges, self.entry_bounds, self.streaming,
                                      self.publish_time_bounds,
                                      last_entry=None if last_entry == _OPEN else last_entry)  # fmt: skip


def packed_runs(runs: Iterable[BlockRangePartition], bytes_per_partition: int) -> Iterator[PackedRunsPartition]:
    """``runs`` (block-range partitions without entry lengths, all
    streaming or none, with the same bounds) packed in order into
    partitions of up to ``bytes_per_partition``, a run counted as its
    blocks' bytes plus :data:`OPEN_COST_BYTES` (one run a partition at least)."""
    for group in packed(runs, (bytes_per_partition,), lambda run: (_bytes(run) + OPEN_COST_BYTES,)):
        yield _packed(group)


def _bytes(run: BlockRangePartition) -> int:
    return sum(end - offset for offset, end, _ in run.blocks)


def _packed(group: list[BlockRangePartition]) -> PackedRunsPartition:
    numbers: list[int] = []
    for run in group:
        last_entry = _OPEN if run.last_entry is None else run.last_entry
        numbers += (run.ledger_id, last_entry, len(run.blocks), len(run.entry_ranges))
        for block in run.blocks:
            numbers += block
        for start, last in run.entry_ranges:
            numbers += (start, _OPEN if last is None else last)
    head = group[0]
    return PackedRunsPartition(
        PackedKeys.of(run.data_key for run in group),
        zlib.compress(struct.pack(f"<{len(numbers)}q", *numbers), 1),
        head.streaming,
        head.entry_bounds,
        head.publish_time_bounds,
    )
