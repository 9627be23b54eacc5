"""Reading an offloaded ledger back, entry by entry: a PIP-17 (v1) ledger
object, or one ledger's run of entries in a PIP-76 (v2) segment.

Entries are found with the block table (floor lookup gives the block), then by
walking the block's entry headers; every position learned is kept in an
offsets cache. Bytes come through a read buffer: each storage request
fetches ``read_buffer_size`` bytes from where the reader needs, so a
sequential (catch-up) read is served from that window and pays one round
trip per buffer, not per entry.

Nothing read is trusted: a block's header is decoded and checked against
its index row the first time the block is touched, every entry header
walked must carry the next id and fit its block, and the framing right
after the last entry served (the next entry's header, padding, or the
block's end) must be consistent, so a zeroed or shifted length cannot
pass as a short entry.
"""

from __future__ import annotations

import struct
from collections import OrderedDict

from ..errors import FormatError, LostEntriesError, StateError
from ..formats import pulsar_v1 as v1
from ..model import Entry
from ..proto import LedgerMetadataFormat
from ..storage import StorageDriver
from .block_tables import BlockRow, BlockTable, V1BlockTable
from .read_handle import LedgerMetadataView, check_read_range

__all__ = ["OffloadedReadHandle"]

_ENTRY_HEADER = struct.Struct(">iq")
_OFFSETS_CACHE_ENTRIES = 65536
# Largest single range request: a larger entry is fetched in pieces, so no
# length read from an object is ever one allocation of its own.
_MAX_REQUEST = 8 * 2**20


class OffloadedReadHandle(LedgerMetadataView):
    """A :class:`~offload_core.offload.read_handle.ReadHandle` over a data
    object and its decoded index (a v1 :class:`v1.Index`, or any
    :class:`BlockTable` with the ledger's ``metadata``; for a segment that
    metadata says which entries of the ledger the segment holds).

    Raises :class:`InvalidRangeError` for entry ranges outside the ledger
    and :class:`FormatError` (naming the ledger and byte offset) when the
    data object does not hold what its index promises.
    """

    def __init__(
        self,
        ledger_id: int,
        index: v1.Index | BlockTable,
        driver: StorageDriver,
        data_key: str,
        *,
        read_buffer_size: int,
        object_size: int | None = None,
        metadata: LedgerMetadataFormat | None = None,
    ) -> None:
        self._ledger_id = ledger_id
        if isinstance(index, v1.Index):
            self._metadata = index.metadata() if metadata is None else metadata
            self._index: BlockTable = V1BlockTable(index)
        elif metadata is None:
            raise TypeError("a block table other than a v1 index needs the ledger's metadata")
        else:
            self._metadata, self._index = metadata, index
        self._driver = driver
        self._data_key = data_key
        self._buffer_size = read_buffer_size
        self._buffer_start = 0
        self._buffer = b""
        self._offsets: OrderedDict[int, int] = OrderedDict()
        self._checked_blocks: set[int] = set()
        # A data object cut short (or longer than its index says) is read
        # as far as both agree; entries past that are lost, not the ledger.
        self._object_end = (
            index.data_object_length if object_size is None else min(object_size, index.data_object_length)
        )
        self._closed = False

    def read(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` inclusive."""
        if self._closed:
            raise StateError(f"ledger {self._ledger_id}: read handle is closed")
        check_read_range(self._ledger_id, first, last, self.last_entry_id)
        entries = []
        for entry_id in range(first, last + 1):
            block = self._index.lookup(entry_id)
            try:
                offset, length = self._locate(entry_id, block)
                start = offset + v1.ENTRY_HEADER_LENGTH
                after = start + length
                block_end = self._index.block_end(block)
                # The next header comes in the same request as the payload, so
                # checking what follows the entry costs no extra round trip.
                buffer, at = self._window(start, length + min(v1.ENTRY_HEADER_LENGTH, block_end - after))
                entries.append(Entry(self._ledger_id, entry_id, buffer[at : at + length]))
                if entry_id == last:
                    self._check_what_follows(entry_id, after, block_end, buffer, at + length)
            except LostEntriesError:
                raise
            except FormatError as exc:
                raise self._lost(str(exc), entry_id, block) from None
            self._remember(entry_id + 1, after)
        return entries

    def close(self) -> None:
        self._closed = True
        self._buffer = b""
        self._offsets.clear()
        self._checked_blocks.clear()

    # -- locating entries ----------------------------------------------------

    def _locate(self, entry_id: int, block: BlockRow) -> tuple[int, int]:
        """The byte offset of ``entry_id``'s entry header in ``block``, and
        its payload length."""
        self._check_block_header(block)
        start, end = block.data_offset, self._index.block_end(block)
        position, at_id = start, block.first_entry_id
        known = self._offsets.get(entry_id)
        if known is not None and start <= known < end:
            position, at_id = known, entry_id
        while True:
            if position >= end:
                raise self._corrupt(position, f"entry {entry_id} is not in block {block.part_id}")
            buffer, at = self._window(position, min(v1.ENTRY_HEADER_LENGTH, end - position))
            try:
                length = v1.read_entry_header(buffer, at, end=at + end - position, expected_id=at_id)
            except FormatError as exc:
                raise self._lost(self._at(position, str(exc)), at_id, block) from None
            if length is None:  # padding: the entry should have been in this block and is not
                raise self._lost(self._at(position, f"entry {at_id} is not in block {block.part_id}"), at_id, block)
            self._remember(at_id, position)
            if at_id == entry_id:
                return position, length
            position += v1.ENTRY_HEADER_LENGTH + length
            at_id += 1

    def _check_block_header(self, block: BlockRow) -> None:
        """Decode ``block``'s header the first time it is touched and check
        it against the index row: magic, header length, zero fill, block
        length and first entry id."""
        if block.part_id in self._checked_blocks:
            return
        try:
            self._check_block_header_once(block)
        except FormatError as exc:
            raise self._lost(str(exc), block.first_entry_id, block) from None
        self._checked_blocks.add(block.part_id)

    def _check_block_header_once(self, block: BlockRow) -> None:
        expected_length = self._index.block_end(block) - block.offset
        if expected_length < v1.BLOCK_HEADER_LENGTH:
            raise self._corrupt(
                block.offset,
                f"block {block.part_id} is cut short: the index's data object length ({self._index.data_object_length})"
                " leaves it no room for a header (Pulsar writes this when an entry is larger than a block)",
            )
        buffer, at = self._window(block.offset, v1.BLOCK_HEADER_LENGTH)
        try:
            self._index.check_header(memoryview(buffer)[at : at + v1.BLOCK_HEADER_LENGTH], block)
        except FormatError as exc:
            raise self._corrupt(block.offset, str(exc)) from None

    def _check_what_follows(self, entry_id: int, position: int, block_end: int, buffer: bytes, at: int) -> None:
        """After ``entry_id`` (ending at ``position``) comes the block's end,
        padding, or the header of entry ``entry_id + 1`` fitting the block;
        anything else means the entry's length field is wrong. The
        ledger's last entry, and the last of a block (the next block
        starts with the next entry), are followed by padding only, so a
        lowered ``lastEntryId`` cannot silently drop entries."""
        remaining = block_end - position
        if remaining == 0:
            return
        peek = buffer[at : at + min(remaining, v1.ENTRY_HEADER_LENGTH)]
        if remaining < 4 or struct.unpack_from(">i", peek)[0] < 0:
            if peek[:4] != v1.PADDING[: len(peek[:4])]:
                raise self._corrupt(position, f"after entry {entry_id} comes neither an entry nor padding")
            return
        if entry_id == self.last_entry_id or self._starts_a_block(entry_id + 1):
            whose = "the ledger's last entry" if entry_id == self.last_entry_id else "its block's last entry"
            raise self._corrupt(
                position,
                f"after entry {entry_id}, {whose}, comes another entry header instead of padding (the ledger "
                "metadata's lastEntryId or the index's block table is wrong)",
            )
        if remaining < v1.ENTRY_HEADER_LENGTH:
            raise self._corrupt(position, f"after entry {entry_id} an entry header is cut off by the block's end")
        length, next_id = _ENTRY_HEADER.unpack_from(peek)
        if next_id != entry_id + 1 or v1.ENTRY_HEADER_LENGTH + length > remaining:
            raise self._corrupt(
                position,
                f"after entry {entry_id} comes an entry header (id {next_id}, {length} bytes) that does not "
                "follow it: the framing is broken",
            )

    def _remember(self, entry_id: int, position: int) -> None:
        self._offsets[entry_id] = position
        self._offsets.move_to_end(entry_id)
        if len(self._offsets) > _OFFSETS_CACHE_ENTRIES:
            self._offsets.popitem(last=False)

    # -- buffered bytes ------------------------------------------------------

    def _starts_a_block(self, entry_id: int) -> bool:
        return entry_id in self._index.block_starts

    def _window(self, position: int, count: int) -> tuple[bytes, int]:
        """A buffer holding bytes ``[position, position + count)`` of the
        data object, and where they start in it; fetches
        ``read_buffer_size`` bytes (or ``count``, if more) when the current
        buffer does not hold them."""
        buffered_from = position - self._buffer_start
        if buffered_from >= 0 and buffered_from + count <= len(self._buffer):
            return self._buffer, buffered_from
        end = min(position + max(count, self._buffer_size), self._object_end)
        if position + count > end:
            raise self._corrupt(position, f"needs {count} bytes past the end of the data object ({self._object_end})")
        pieces = []
        for start in range(position, end, _MAX_REQUEST):
            stop = min(start + _MAX_REQUEST, end)
            piece = self._driver.read(self._data_key, start, stop)
            if len(piece) != stop - start:
                raise self._corrupt(start, f"data object ends early ({len(piece)} of {stop - start} bytes came back)")
            pieces.append(piece)
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        self._buffer_start, self._buffer = position, data
        return data, 0

    def _at(self, position: int, problem: str) -> str:
        return f"offloaded ledger {self._ledger_id}, object {self._data_key!r}, byte offset {position}: {problem}"

    def _lost(self, message: str, first_lost: int, block: BlockRow) -> LostEntriesError:
        """The error for entries ``first_lost`` to the end of ``block``: the
        ones before stay readable, and so may later blocks."""
        last_lost = max(self._index.block_entries(block)[1], first_lost)
        return LostEntriesError(
            f"{message}; entries {first_lost}..{last_lost} (block {block.part_id}) are lost, the ones before them "
            "stay readable",
            ledger_id=self._ledger_id,
            first=first_lost,
            last=last_lost,
        )

    def _corrupt(self, position: int, problem: str) -> FormatError:
        return FormatError(
            f"offloaded ledger {self._ledger_id}, object {self._data_key!r}, byte offset {position}: {problem}"
        )
