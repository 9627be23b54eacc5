"""What an offload reads and what it records: a closed ledger's payloads
in order, read in batches of about a block, and the index rows of the
blocks as they are written."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence

from ...errors import FormatError
from ...formats import pulsar_v1 as v1
from ..reading.read_handle import ReadHandle

__all__ = ["ledger_payloads", "recorded"]

# Pulsar reads 100 entries per call; we also cap a batch's expected bytes
# at one block so that huge entries do not blow the memory bound.
_ENTRIES_PER_READ = 100
_ENTRY_ID = operator.attrgetter("entry_id")
_ENTRY_DATA = operator.attrgetter("data")


def ledger_payloads(handle: ReadHandle, max_block_size: int) -> Iterator[bytes]:
    """Every payload of the ledger behind ``handle``, in order. Raises
    :class:`FormatError` when the handle returns fewer entries than asked
    or ids out of order."""
    return itertools.chain.from_iterable(_payload_batches(handle, max_block_size))


def _payload_batches(handle: ReadHandle, max_block_size: int) -> Iterator[list[bytes]]:
    """The ledger's payloads in order, a batch per read, each read small
    enough to hold about a block's worth of bytes. Ids are checked a batch
    at a time."""
    last = handle.last_entry_id
    average = max(1, handle.length // (last + 1))
    batch = max(1, min(_ENTRIES_PER_READ, max_block_size // average))
    first = 0
    while first <= last:
        end = min(first + batch - 1, last)
        entries = handle.read(first, end)
        if len(entries) != end - first + 1:
            raise FormatError(
                f"ledger {handle.ledger_id}: asked for entries {first}..{end}, the read handle returned {len(entries)}"
            )
        ids = list(map(_ENTRY_ID, entries))
        if ids != list(range(first, end + 1)):
            wrong = next(n for n, entry_id in enumerate(ids, start=first) if entry_id != n)
            raise FormatError(
                f"ledger {handle.ledger_id}: the read handle returned entry {ids[wrong - first]} where {wrong} was "
                "asked for"
            )
        yield list(map(_ENTRY_DATA, entries))
        first = end + 1


def recorded(
    blocks: Iterable[v1.EncodedBlock], table: list[v1.IndexEntry], lengths: list[Sequence[int]]
) -> Iterator[bytes | bytearray]:
    """The bytes of each of ``blocks``, appending its index row to
    ``table`` and its entry lengths to ``lengths`` as it is handed on (so
    both hold exactly the blocks the write consumed)."""
    for block in blocks:
        table.append(block.entry)
        lengths.append(block.entry_lengths)
        yield block.data
