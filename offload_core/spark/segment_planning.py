"""Planning the ``pulsar-offload`` read of PIP-76 segments: every complete
segment's index is read, and each ledger's run of blocks in a segment is
cut into partitions like a v1 ledger's blocks.

A bare store has no metadata to say which copy of an entry counts, so the
plan makes each ``(ledger, entry)`` come out once: a ledger that also has a
complete v1 object is read from that object only (it holds the whole
ledger: it was offloaded whole after streaming was switched off); and the
segments of a ledger are ordered by the entry they start it at, each kept
up to the entry before the next one starts (two starting at the same entry,
a duplicate left by a crash, count once: the first by uuid)."""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_right
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..formats import pulsar_v1 as v1
from ..formats import pulsar_v2 as v2
from ..model import ObjectInfo
from ..offload.listing_pairs import INDEX_SUFFIX, ListingPairs
from .block_ranges import overlaps
from .column_bounds import ANY_VALUE, ColumnBounds
from .key_packing import pack_key, unpack_key
from .planning_reads import read_objects
from .read_options import ReadOptions

__all__ = ["SegmentBlocks", "pairing_segments", "plan_segment_blocks", "pulsar_key", "segment_role"]


@dataclass(frozen=True)
class SegmentBlocks:
    """One ledger's blocks in one segment, and the entries to keep of them."""

    ledger_id: int
    data_key: str
    blocks: tuple[tuple[int, int, int], ...]  # (offset, end, first entry id)
    entry_ranges: tuple[tuple[int, int | None], ...]


def plan_segment_blocks(
    options: ReadOptions,
    data_keys: Sequence[str],
    *,
    skip_ledgers: Collection[int],
    ledger_bounds: ColumnBounds = ANY_VALUE,
    entry_bounds: ColumnBounds = ANY_VALUE,
) -> Iterator[SegmentBlocks]:
    """The segment blocks the read needs, per ledger and segment, in
    ledger order, of the complete segments whose data objects are
    ``data_keys`` (see :func:`segment_role`), their indexes all read
    before the first is given (``skip_ledgers`` is asked then only);
    ledgers in ``skip_ledgers`` (read from v1 objects) and ledgers or
    entries the selection and bounds exclude are left out, and so is a
    segment deleted since it was listed if ``failOnDataLoss=false``
    (:class:`NotFoundError` naming it otherwise). ``data_keys`` is let go
    once the indexes are read (each run holds its key from then on): a
    caller that keeps no reference of its own has it freed before the
    first blocks are given."""
    # Per ledger, its runs packed: rows, key length, data key packed, (first entry, offset, end) * rows. As
    # tuples of Python ints they were some 400 bytes a segment, held until the last index is read.
    runs: dict[int, bytes | bytearray] = {}
    indexes = read_objects(options, (data_key + INDEX_SUFFIX for data_key in data_keys), v2.decode_index)
    for data_key, index in zip(data_keys, indexes, strict=True):
        if index is None:
            continue
        packed_key = b""
        for section in index.ledgers:
            ledger_id = section.ledger_id
            if ledger_id in skip_ledgers or not options.selection.wants_ledger(ledger_id):
                continue
            if not ledger_bounds.admits(ledger_id):
                continue
            packed_key = packed_key or pack_key(data_key)
            rows = [_ROW.pack(row.first_entry_id, row.offset, index.block_end(row)) for row in section.rows]
            run = b"".join((_RUN.pack(len(rows), len(packed_key)), packed_key, *rows))
            held = runs.get(ledger_id)
            if held is None:
                runs[ledger_id] = run  # a ledger in one segment costs no buffer of its own
            elif isinstance(held, bytearray):
                held += run
            else:
                runs[ledger_id] = bytearray(held) + run
    del data_keys, indexes  # what the caller let go of too is freed: the runs hold their keys
    # Taken from the end of a list, each ledger's runs are freed as they are given; popped from the dict, its
    # table and keys (a Python int a ledger: some 70 bytes a one-segment ledger) would stay to the last.
    ledger_ids = array("q", sorted(runs, reverse=True))
    in_order = [runs[ledger_id] for ledger_id in ledger_ids]
    del runs
    while ledger_ids:
        yield from _ledger_blocks(options, ledger_ids.pop(), _runs_of(in_order.pop()), entry_bounds)


_RUN = struct.Struct("<II")  # a run's rows, its packed data key's length
_ROW = struct.Struct("<qqq")  # a block's first entry, offset, end


def _runs_of(held: bytes | bytearray) -> list[tuple[int, str, str, list[tuple[int, int, int]]]]:
    """One ledger's runs as :func:`plan_segment_blocks` held them: (first
    entry, segment uuid, data key, its blocks' (first entry, offset, end))."""
    decoded = []
    at = 0
    while at < len(held):
        count, length = _RUN.unpack_from(held, at)
        at += _RUN.size
        data_key = unpack_key(held[at : at + length])
        at += length
        rows: list[tuple[int, int, int]] = list(_ROW.iter_unpack(held[at : at + _ROW.size * count]))
        at += _ROW.size * count
        decoded.append((rows[0][0], data_key[-_UUID_LENGTH:], data_key, rows))
    return decoded


def _ledger_blocks(
    options: ReadOptions,
    ledger_id: int,
    runs: list[tuple[int, str, str, list[tuple[int, int, int]]]],
    entry_bounds: ColumnBounds,
) -> Iterator[SegmentBlocks]:
    ordered = sorted(runs, key=lambda run: (run[0], run[1]))
    starts = [run[0] for run in ordered]
    for position, (first, _uuid, data_key, rows) in enumerate(ordered):
        if position and starts[position - 1] == first:
            continue  # a second copy of the same run
        following = bisect_right(starts, first)  # the next run starting later: ``starts`` is sorted
        cap = starts[following] - 1 if following < len(starts) else None
        ranges = _clip(options.selection.entry_ranges(ledger_id), first, cap)
        blocks = []
        for number, (row_first, offset, end) in enumerate(rows):
            last = rows[number + 1][0] - 1 if number + 1 < len(rows) else cap
            if overlaps(row_first, last, ranges) and entry_bounds.overlaps(
                row_first, last if last is not None else 2**63 - 1
            ):
                blocks.append((offset, end, row_first))
        if blocks and ranges:
            yield SegmentBlocks(ledger_id, data_key, tuple(blocks), ranges)


_UUID_LENGTH = 36


def segment_role(parsed: v2.SegmentKey | None) -> bool | None:
    """A segment's data object (``False``), its index (``True``), or
    neither (its entry offsets, any other key), from its key's
    :func:`~offload_core.formats.pulsar_v2.parse_segment_key`: what
    :class:`~offload_core.offload.listing_pairs.ListingPairs` pairs."""
    return None if parsed is None or parsed.is_entry_offsets else parsed.is_index


def pulsar_key(key: str) -> v1.LedgerKey | v2.SegmentKey | None:
    """``key`` parsed as a whole-ledger object's or a segment's (no key is
    both), once for every use planning makes of it."""
    return v1.parse_key(key) or v2.parse_segment_key(key)


def pairing_segments(
    listing: Iterable[tuple[ObjectInfo, v1.LedgerKey | v2.SegmentKey | None]], found: Callable[[str, int], None]
) -> Iterator[tuple[ObjectInfo, v1.LedgerKey | None]]:
    """``listing`` (sorted by key, each record with its :func:`pulsar_key`)
    passed on as it comes, each record with its key parsed as a
    whole-ledger object's; ``found(data key, stored size)`` is called for
    each complete PIP-76 segment as its index passes. Raises what
    :class:`ListingPairs` raises."""
    pairs = ListingPairs()
    for info, parsed in listing:
        segment = parsed if isinstance(parsed, v2.SegmentKey) else None
        if (pair := pairs.feed(info, segment_role(segment))) is not None:
            found(*pair)
        yield info, parsed if isinstance(parsed, v1.LedgerKey) else None


def _clip(
    ranges: tuple[tuple[int, int | None], ...], first: int, cap: int | None
) -> tuple[tuple[int, int | None], ...]:
    clipped = []
    for start, end in ranges:
        low = max(start, first)
        high = end if cap is None else cap if end is None else min(end, cap)
        if high is None or low <= high:
            clipped.append((low, high))
    return tuple(clipped)
