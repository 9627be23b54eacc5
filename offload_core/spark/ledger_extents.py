"""What a Pulsar offload store holds of each ledger, block by block, for
streaming reads: a micro-batch ends where the entries readable so far
end, and ``maxBytesPerTrigger`` is counted in the blocks it takes.

A ledger offloaded whole (a complete PIP-17 object) is read from that
object, as :func:`offload_core.spark.pulsar_offload.plan_partitions` reads
it; a ledger streamed in PIP-76 segments is readable from its first entry
up to the first entry no complete segment holds yet."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from ..formats import pulsar_v1 as v1
from ..formats import pulsar_v2 as v2
from ..offload.ledgers.inventory import complete_ledgers_of, sorted_copies
from ..offload.listing_pairs import INDEX_SUFFIX
from .ledger_copies import ledger_copies_to_read
from .planning_reads import open_planning_driver, read_objects
from .read_options import ReadOptions
from .segment_planning import pairing_segments, pulsar_key

__all__ = ["Block", "IndexedBlocks", "ledger_extents"]


@dataclass(frozen=True)
class Block:
    """Entries ``[first, end)`` of a ledger, in a block of ``size`` bytes."""

    first: int
    end: int
    size: int


# An offloaded object is written once and never changed (a ledger offloaded
# again gets a new uuid, so new keys), so what its index says holds for as
# long as its data object is listed with the same size.
_Indexed = tuple[str, int]  # the data object's key and size


@dataclass
class IndexedBlocks:
    """The blocks of the index objects read so far, kept by a streaming
    reader across micro-batches so that each ``latestOffset`` reads only
    the indexes offloaded since the last; an object no longer listed is
    forgotten."""

    whole: dict[_Indexed, list[Block]] = field(default_factory=dict)
    segments: dict[_Indexed, list[tuple[int, list[Block]]]] = field(default_factory=dict)

    def segment_wanted(self, ranges: Iterable[tuple[int, int, int]]) -> Callable[[str], bool]:
        """Whether a segment (by its data object's key) may hold an entry of
        ``ranges`` (ledger, first and last entry): one not read yet may; one
        read does if a block of it overlaps a range. A segment passed over
        caps no run a micro-batch reads: a run is cut only where a later one
        starts, and one holding none of the range starts past it or ends
        before it."""
        wanted: dict[int, list[tuple[int, int]]] = {}
        for ledger_id, first, last in ranges:
            wanted.setdefault(ledger_id, []).append((first, last))
        held = {data_key: sections for (data_key, _), sections in self.segments.items()}

        def may_hold(data_key: str) -> bool:
            sections = held.get(data_key)
            return sections is None or any(
                block.first <= last and first < block.end
                for ledger_id, blocks in sections
                for first, last in wanted.get(ledger_id, ())
                for block in blocks
            )

        return may_hold


def ledger_extents(options: ReadOptions, known: IndexedBlocks | None = None) -> dict[int, list[Block]]:
    """Per wanted ledger, its readable blocks in entry order, without gaps
    or overlaps (a block starting past the entries before it ends the
    ledger's readable run, until a segment fills the gap). Reads the index
    of each complete object not in ``known`` (and adds it there). Raises
    :class:`ConfigError` for a ledger with several complete whole-ledger
    copies that ``ledgerUuids`` does not choose between, and
    :class:`NotFoundError` for an object gone since it was listed, unless
    ``failOnDataLoss=false`` (then it is left out, logged)."""
    known = IndexedBlocks() if known is None else known
    segments: list[tuple[str, int]] = []
    with open_planning_driver(options.url, options.driver_options) as driver:
        listing = pairing_segments(((info, pulsar_key(info.key)) for info in driver.list("")),
                                   lambda key, size: segments.append((key, size)))  # fmt: skip
        ledgers = ledger_copies_to_read(sorted_copies(complete_ledgers_of(listing)), options)
    known.whole = _kept(known.whole, {(ledger.data_key, ledger.size): ledger.index_key for ledger in ledgers},
                        options, _whole_blocks)  # fmt: skip
    known.segments = _kept(known.segments, {segment: segment[0] + INDEX_SUFFIX for segment in segments},
                           options, _segment_blocks)  # fmt: skip
    whole: dict[int, list[Block]] = {}
    for ledger in ledgers:
        if (ledger.data_key, ledger.size) in known.whole:
            whole.setdefault(ledger.ledger_id, []).extend(known.whole[ledger.data_key, ledger.size])
    blocks: dict[int, list[Block]] = {}
    for sections in known.segments.values():
        for ledger_id, found in sections:
            if ledger_id not in whole and options.selection.wants_ledger(ledger_id):
                blocks.setdefault(ledger_id, []).extend(found)
    blocks.update(whole)
    return {ledger_id: _contiguous(found) for ledger_id, found in sorted(blocks.items())}


T = TypeVar("T")


def _kept(
    known: dict[_Indexed, T], listed: dict[_Indexed, str], options: ReadOptions, decode: Callable[[bytes], T]
) -> dict[_Indexed, T]:
    """What ``known`` holds of the ``listed`` objects, with the index (its
    key the value in ``listed``) of each other one read and decoded; one
    deleted since it was listed is left out (see
    :func:`~offload_core.spark.planning_reads.vanished_while_planning`)."""
    new = [name for name in listed if name not in known]
    kept = {name: known[name] for name in listed if name in known}
    indexes = read_objects(options, (listed[name] for name in new), decode)
    kept.update((name, index) for name, index in zip(new, indexes, strict=True) if index is not None)
    return kept


def _whole_blocks(data: bytes) -> list[Block]:
    index = v1.decode_index(data)
    ends = [entry.first_entry_id for entry in index.entries[1:]] + [index.last_entry_id + 1]
    return [
        Block(entry.first_entry_id, end, index.block_end(entry) - entry.offset)
        for entry, end in zip(index.entries, ends, strict=True)
    ]


def _segment_blocks(data: bytes) -> list[tuple[int, list[Block]]]:
    segment_index = v2.decode_index(data)
    sections = []
    for section in segment_index.ledgers:
        rows = section.rows
        ends = [row.first_entry_id for row in rows[1:]] + [section.info().entries]
        sections.append((section.ledger_id, [
            Block(row.first_entry_id, end, segment_index.block_end(row) - row.offset)
            for row, end in zip(rows, ends, strict=True)
        ]))  # fmt: skip
    return sections


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
