"""The loops ``make bench`` compares the sequential read with: the bare
parse loop over a data object in memory (slices only), and the contract's
floor (the same loop building the one ``Entry`` per entry a
``ReadHandle.read`` returns). Written out twice on purpose: a shared walk
(a generator, a callback) would add its own cost to the very limit
measured."""

from __future__ import annotations

import struct

from offload_core.formats import pulsar_v1 as v1
from offload_core.model import Entry

__all__ = ["bare_parse", "bare_parse_entries"]

_HEADER = struct.Struct(">iq")
_BLOCK_LENGTH = struct.Struct(">q")


def bare_parse(data: bytes) -> int:
    """The limit: walk every block's entry headers and slice each payload."""
    unpack = _HEADER.unpack_from
    payloads = []
    block = 0
    while block < len(data):
        (length,) = _BLOCK_LENGTH.unpack_from(data, block + 12)
        end, position = block + length, block + v1.BLOCK_HEADER_LENGTH
        while position + 12 <= end:
            size, _ = unpack(data, position)
            if size < 0:
                break
            payloads.append(data[position + 12 : position + 12 + size])
            position += 12 + size
        block = end
    return len(payloads)


def bare_parse_entries(data: bytes, batch: int = 100) -> int:
    """The contract's floor: the bare loop, building the one ``Entry`` per
    entry that ``ReadHandle.read`` returns (and checking nothing), handed
    out in lists of ``batch`` as ``read_sequentially`` asks for them."""
    unpack = _HEADER.unpack_from
    make = tuple.__new__
    entries: list[Entry] = []
    count = 0
    block = 0
    while block < len(data):
        (length,) = _BLOCK_LENGTH.unpack_from(data, block + 12)
        end, position = block + length, block + v1.BLOCK_HEADER_LENGTH
        while position + 12 <= end:
            size, entry_id = unpack(data, position)
            if size < 0:
                break
            entries.append(make(Entry, (1, entry_id, data[position + 12 : position + 12 + size])))
            position += 12 + size
            if len(entries) == batch:
                count += batch
                entries = []
        block = end
    return count + len(entries)
