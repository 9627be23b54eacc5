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
) -> Iterator[Any]:
    """Record batches (of the Arrow ``schema``: a subset of the source's
    columns, in any order, checked by the reader) holding the block's entries that ``wanted``
    (inclusive id ranges, ``None`` open-ended) and ``bounds`` admit, one row
    per entry with null message columns, at most ``max_rows`` rows each.
    Raises :class:`FormatError` for a block whose framing is broken."""
    import pyarrow as pa
    import pyarrow.compute as pc

    positions = v1.block_entry_positions(block, first_entry_id)
    count = len(positions) - 1
    if count == 0:
        return
    offsets = array("i", positions)
    if sys.byteorder != "little":  # Arrow buffers are little-endian
        offsets.byteswap()
    framed = pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(block)], null_count=0)
    keep = _kept_rows(first_entry_id, count, wanted, bounds)
    if keep is not None:
        framed = framed.filter(pa.array(keep, pa.bool_()))
        entry_ids = pa.array([first_entry_id + n for n, kept in enumerate(keep) if kept], pa.int64())
    else:
        entry_ids = pa.array(range(first_entry_id, first_entry_id + count), pa.int64())
    rows = len(entry_ids)
    if not rows:
        return
    columns = {
        "ledger_id": lambda: pa.array([ledger_id] * rows, pa.int64()),
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
