"""Undecoded entries of a block straight into Arrow: offsets and one copy
of the payload bytes, no Python object per entry.

The framed entries of a block (12-byte header, then payload, back to back)
are exactly the values of an Arrow binary array whose offsets are the
header positions; slicing 12 bytes off the front of every value (one
vectorised kernel) leaves the payloads. The only per-entry Python work is
the framing check that finds those positions (ids in order, lengths inside
the block, padding after), the same checks every reader makes.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

from ..formats import pulsar_v1 as v1
from .column_bounds import ColumnBounds

__all__ = ["entry_batches"]

# Past any payload's end (an entry is at most 2^31 - 1 bytes): "to the end".
_MAX_VALUE = 2**31 - 1


def entry_batches(
    ledger_id: int,
    block: bytes,
    first_entry_id: int,
    *,
    wanted: Sequence[tuple[int, int | None]],
    bounds: ColumnBounds,
    schema: Any,
    max_rows: int,
    entry_lengths: bytes | None = None,
) -> Iterator[Any]:
    """Record batches (of the Arrow ``schema``: a subset of the source's
    columns, in any order, checked by the reader) holding the block's entries that ``wanted``
    (inclusive id ranges, ``None`` open-ended) and ``bounds`` admit, one row
    per entry with null message columns, at most ``max_rows`` rows each.
    ``entry_lengths`` (the entries' payload lengths as big-endian uint32s,
    from the index's entry-offsets section) saves walking the headers;
    every header is checked all the same, and lengths that do not frame
    the block are set aside for the walk. Raises :class:`FormatError` for a
    block whose framing is broken."""
    import pyarrow as pa
    import pyarrow.compute as pc

    framed = None if entry_lengths is None else _framed_from_lengths(block, first_entry_id, entry_lengths)
    if framed is None:
        positions = v1.block_entry_positions(block, first_entry_id)
        framed = _framed(block, array("i", positions))
    count = len(framed)
    if count == 0:
        return
    keep = _kept_rows(first_entry_id, count, wanted, bounds)
    if keep is not None:
        framed = framed.filter(pa.array(keep, pa.bool_()))
        entry_ids = pa.array([first_entry_id + n for n, kept in enumerate(keep) if kept], pa.int64())
    else:
        entry_ids = _consecutive(first_entry_id, count)
    rows = len(entry_ids)
    if not rows:
        return
    columns = {
        "ledger_id": lambda: pa.repeat(pa.scalar(ledger_id, pa.int64()), rows),
        "entry_id": lambda: entry_ids,
        "payload": lambda: pc.binary_slice(framed, v1.ENTRY_HEADER_LENGTH, _MAX_VALUE),
    }
    arrays = []
    for field in schema:
        make = columns.get(field.name)
        arrays.append(make() if make is not None else pa.nulls(rows, field.type))
    batch = pa.RecordBatch.from_arrays(arrays, schema=schema)
    for start in range(0, rows, max_rows):
        yield batch.slice(start, max_rows)


def _framed(block: bytes, positions: array[int]) -> Any:
    """The block's framed entries as an Arrow binary array whose offsets
    are the entry header ``positions`` (the last: where padding starts)."""
    import pyarrow as pa

    if sys.byteorder != "little":  # Arrow buffers are little-endian
        positions.byteswap()
    buffers = [None, pa.py_buffer(positions), pa.py_buffer(block)]
    return pa.Array.from_buffers(pa.binary(), len(positions) - 1, buffers, null_count=0)


def _consecutive(first: int, count: int) -> Any:
    """An Arrow int64 array ``first, first + 1, ...`` of ``count`` values,
    made in C (a running sum of ones), not from Python ints."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), count), start=first - 1)


def _framed_from_lengths(block: bytes, first_entry_id: int, entry_lengths: bytes) -> Any | None:
    """The framed entries located from their lengths (a running sum in
    Arrow, no header walk) and checked in bulk: every header read from the
    block must hold its entry's length and id, and padding must follow the
    last entry. ``None`` when anything disagrees (the walk then explains
    what, or finds the block sound and the lengths wrong), and on a
    big-endian machine (the byte orders below assume a little-endian one)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    count = len(entry_lengths) // 4
    if sys.byteorder != "little" or count == 0 or len(entry_lengths) != 4 * count:
        return None
    native = array("I")
    native.frombytes(entry_lengths)
    native.byteswap()
    lengths = pa.Array.from_buffers(pa.uint32(), count, [None, pa.py_buffer(native)])
    ends = pc.cumulative_sum(pc.add(pc.cast(lengths, pa.int64()), v1.ENTRY_HEADER_LENGTH),
                             start=v1.BLOCK_HEADER_LENGTH)  # fmt: skip
    end = ends[-1].as_py()
    if end > min(len(block), _MAX_VALUE) or block[end:] != v1.padding(len(block) - end):
        return None  # positions are Arrow int32 offsets
    positions = pa.concat_arrays([pa.array([v1.BLOCK_HEADER_LENGTH], pa.int64()), ends]).cast(pa.int32())
    framed = pa.Array.from_buffers(pa.binary(), count, [None, positions.buffers()[1], pa.py_buffer(block)],
                                   null_count=0)  # fmt: skip
    headers = pc.binary_slice(framed, 0, v1.ENTRY_HEADER_LENGTH).buffers()[2].to_pybytes()
    ids = array("q")
    ids.frombytes(_consecutive(first_entry_id, count).buffers()[1].to_pybytes()[: 8 * count])
    ids.byteswap()
    big_endian_ids = ids.tobytes()
    # Field by field, byte by byte (strided slices, all in C): each header's
    # length must be the section's and its id the next one.
    for byte in range(4):
        if headers[byte::12] != entry_lengths[byte::4]:
            return None
    for byte in range(8):
        if headers[4 + byte :: 12] != big_endian_ids[byte::8]:
            return None
    return framed


def _kept_rows(
    first_entry_id: int, count: int, wanted: Sequence[tuple[int, int | None]], bounds: ColumnBounds
) -> list[bool] | None:
    """Which of the block's entries to keep; ``None`` for all of them."""
    last = first_entry_id + count - 1
    whole = any(low <= first_entry_id and (high is None or high >= last) for low, high in wanted)
    if (
        whole
        and bounds.values is None
        and (bounds.low is None or bounds.low <= first_entry_id)
        and (bounds.high is None or bounds.high >= last)
    ):
        return None
    return [
        any(low <= entry_id and (high is None or entry_id <= high) for low, high in wanted) and bounds.admits(entry_id)
        for entry_id in range(first_entry_id, last + 1)
    ]
