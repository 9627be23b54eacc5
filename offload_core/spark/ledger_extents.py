"""What a Pulsar offload store holds of each ledger, block by block, for
streaming reads: a micro-batch ends where the entries readable so far
end, and ``maxBytesPerTrigger`` is counted in the blocks it takes.

A ledger offloaded whole (a complete PIP-17 object) is read from that
object, as :func:`offload_core.spark.pulsar_offload.plan_partitions` reads
it; a ledger streamed in PIP-76 segments is readable from its first entry
up to the first entry no complete segment holds yet."""

from __future__ import annotations

from dataclasses import dataclass

from ..formats import pulsar_v1 as v1
from ..formats import pulsar_v2 as v2
from ..offload.ledgers.inventory import find_complete_ledgers
from ..offload.segments.segment_inventory import find_segments
from .ledger_copies import ledger_copies_to_read
from .planning_reads import open_planning_driver, read_objects
from .read_options import ReadOptions

__all__ = ["Block", "ledger_extents"]


@dataclass(frozen=True)
class Block:
    """Entries ``[first, end)`` of a ledger, in a block of ``size`` bytes."""

    first: int
    end: int
    size: int


def ledger_extents(options: ReadOptions) -> dict[int, list[Block]]:
    """Per wanted ledger, its readable blocks in entry order, without gaps
    or overlaps (a block starting past the entries before it ends the
    ledger's readable run, until a segment fills the gap). Raises
    :class:`ConfigError` for a ledger with several complete whole-ledger
    copies that ``ledgerUuids`` does not choose between."""
    with open_planning_driver(options.url, options.driver_options) as driver:
        ledgers = ledger_copies_to_read(find_complete_ledgers(driver.list("")), options)
        segments = [segment for segment in find_segments(driver) if segment.complete]
    blocks: dict[int, list[Block]] = {}
    whole: dict[int, list[Block]] = {}
    for ledger, index in zip(ledgers, read_objects(options, (ledger.index_key for ledger in ledgers),
                                                   v1.decode_index), strict=True):  # fmt: skip
        ends = [entry.first_entry_id for entry in index.entries[1:]] + [index.last_entry_id + 1]
        whole.setdefault(ledger.ledger_id, []).extend(
            Block(entry.first_entry_id, end, index.block_end(entry) - entry.offset)
            for entry, end in zip(index.entries, ends, strict=True)
        )
    index_keys = (segment.prefix + v2.segment_index_key(segment.uuid) for segment in segments)
    for segment_index in read_objects(options, index_keys, v2.decode_index):
        for section in segment_index.ledgers:
            if section.ledger_id in whole or not options.selection.wants_ledger(section.ledger_id):
                continue
            rows = section.rows
            ends = [row.first_entry_id for row in rows[1:]] + [section.info().entries]
            blocks.setdefault(section.ledger_id, []).extend(
                Block(row.first_entry_id, end, segment_index.block_end(row) - row.offset)
                for row, end in zip(rows, ends, strict=True)
            )
    blocks.update(whole)
    return {ledger_id: _contiguous(found) for ledger_id, found in sorted(blocks.items())}


def _contiguous(found: list[Block]) -> list[Block]:
    """The run of blocks from the ledger's first entry with no gap; a block
    (or a part of one) a block before it already covers counts once."""
    run: list[Block] = []
    for block in sorted(found, key=lambda b: (b.first, -b.end)):
        reached = run[-1].end if run else block.first
        if block.end <= reached and run:
            continue
        if block.first > reached:
            break
        run.append(Block(max(block.first, reached), block.end, block.size))
    return run
