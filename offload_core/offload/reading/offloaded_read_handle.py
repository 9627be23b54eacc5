"""Reading an offloaded ledger back, entry by entry: a PIP-17 (v1) ledger
object, or one ledger's run of entries in a PIP-76 (v2) segment.

The block table (floor lookup) gives an entry's block; the entry-offsets
section, where the object has one, gives its byte offset, so a cold random
read is one ranged GET. Without it (every Pulsar-written object) the
reader walks entry headers from the nearest position it already knows in
that block. Positions are remembered per block: the ones a walk passed and
where each read stopped, never one per entry decoded.

Entries are decoded a window at a time: one ``unpack_from`` per entry
header over the buffered bytes, one ``bytes`` copy per payload. A read
that continues where an earlier one stopped is sequential: its bytes come
from that reader's stream of ranges read ahead on the offloader's
read-ahead pool (see :mod:`offload_core.offload.reading.read_ahead`), so a
catch-up reader does not wait for each GET. A handle follows ``readers``
such readers at once (one by default; a shared handle, more).

Nothing read is trusted: a block's header is decoded and checked against
its index row whenever a read starts at the block's first entry, every
entry header must carry the next id and fit its block, and the framing
right after the last entry served (the next entry's header, padding, or
the block's end) must be consistent, so a zeroed or shifted length cannot
pass as a short entry.
"""

from __future__ import annotations

import struct
from collections import OrderedDict

from ...errors import FormatError, LostEntriesError, StateError
from ...formats import pulsar_v1 as v1
from ...formats.entry_offsets import EntryOffsets
from ...model import Entry
from ...proto import LedgerMetadataFormat
from ...storage import StorageDriver
from .block_checkpoints import BlockCheckpoints
from .block_tables import BlockRow, BlockTable, V1BlockTable
from .object_bytes import ObjectBytes, Stream
from .read_ahead import ReadAheadPool
from .read_handle import LedgerMetadataView, check_read_range

__all__ = ["OffloadedReadHandle"]

_ENTRY_HEADER = struct.Struct(">iq")
_HEADER = v1.ENTRY_HEADER_LENGTH


class OffloadedReadHandle(LedgerMetadataView):
    """A :class:`~offload_core.offload.reading.read_handle.ReadHandle` over a data
    object and its decoded index (a v1 :class:`v1.Index`, or any
    :class:`BlockTable` with the ledger's ``metadata``; for a segment that
    metadata says which entries of the ledger the segment holds).

    ``entry_offsets`` (checked against the block table by the caller) lets
    random reads go straight to an entry; ``read_ahead`` serves sequential
    reads (without it every window is fetched on the caller's thread).

    Raises :class:`InvalidRangeError` for entry ranges outside the ledger,
    :class:`LostEntriesError` (a :class:`FormatError` naming the ledger,
    byte offset and the entries lost) when the data object does not hold
    what its index promises, and :class:`StateError` once closed.
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
        entry_offsets: EntryOffsets | None = None,
        read_ahead: ReadAheadPool | None = None,
    ) -> None:
        self._ledger_id = ledger_id
        if isinstance(index, v1.Index):
            self._metadata = index.metadata() if metadata is None else metadata
            self._index: BlockTable = V1BlockTable(index)
        elif metadata is None:
            raise TypeError("a block table other than a v1 index needs the ledger's metadata")
        else:
            self._metadata, self._index = metadata, index
        self._data_key = data_key
        self._entry_offsets = entry_offsets
        # A data object cut short (or longer than its index says) is read
        # as far as both agree; entries past that are lost, not the ledger.
        object_end = index.data_object_length if object_size is None else min(object_size, index.data_object_length)
        self._bytes = ObjectBytes(
            driver, data_key, object_end, buffer_size=read_buffer_size, pool=read_ahead, corrupt=self._corrupt
        )
        self._cursors: OrderedDict[int, tuple[int, Stream]] = OrderedDict()
        self.readers = 1
        """How many sequential readers the handle follows at once, each with
        its own read-ahead stream (one: a read elsewhere is a seek, and
        cancels what was read ahead). A handle shared by several readers
        should follow as many."""
        self._checkpoints = BlockCheckpoints()
        self._checked_blocks: set[int] = set()
        self._closed = False

    def read(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` inclusive."""
        if self._closed:
            raise StateError(f"ledger {self._ledger_id}: read handle is closed")
        check_read_range(self._ledger_id, first, last, self.last_entry_id)
        cursor = self._cursors.pop(first, None)
        stream = cursor[1] if cursor is not None else None
        if cursor is None:
            # A new reader, or one that moved: make room for it before its
            # read, so a single reader's seek cancels what it read ahead at once.
            self._make_room()
        try:
            entries, position = self._read(first, last, cursor[0] if cursor is not None else None, stream)
        except BaseException:
            if stream is not None:
                self._bytes.drop(stream)
            raise
        # The reader that goes on from here reads sequentially: give it a
        # stream (fetching nothing until it reads again). Two readers that
        # stopped at the same entry go on with one cursor.
        replaced = self._cursors.pop(last + 1, None)
        if replaced is not None:
            self._bytes.drop(replaced[1])
        self._make_room()
        self._cursors[last + 1] = (position, stream if stream is not None else self._bytes.stream())
        return entries

    def _read(self, first: int, last: int, known: int | None, stream: Stream | None) -> tuple[list[Entry], int]:
        entries: list[Entry] = []
        entry_id = first
        position = -1
        while entry_id <= last:
            block = self._index.lookup(entry_id)
            stop = min(last, self._index.block_entries(block)[1])
            if stop < entry_id:  # the index gives this block no entries: the entry is nowhere
                raise self._lost(self._at(block.offset, f"entry {entry_id} is not in block {block.part_id}"),
                                 entry_id, block)  # fmt: skip
            try:
                position = self._position(entry_id, block, known if entry_id == first else None, stream)
            except LostEntriesError:
                raise
            except FormatError as exc:  # the object ends before the entry
                raise self._lost(str(exc), entry_id, block) from None
            position = self._decode(block, entry_id, stop, position, entries, stream)
            entry_id = stop + 1
        self._check_what_follows(last, position, stream)
        return entries, position

    def prefetch(self, entry_id: int) -> bool:
        """Start reading ahead from ``entry_id`` for the reader that will read
        it next (a reader crossing into this ledger or segment), without
        waiting. False when its position is not known without reading (no
        entry offsets and not a block's first entry) or it is already
        followed. Raises :class:`InvalidRangeError` for an entry the handle
        does not hold."""
        if self._closed or entry_id in self._cursors:
            return False
        block = self._index.lookup(entry_id)
        number = entry_id - block.first_entry_id
        if number == 0:
            position, start = block.data_offset, block.offset  # the first read checks the block's header
        elif self._entry_offsets is not None:
            position = start = self._entry_offsets.position(block.part_id - 1, number, block.data_offset)
        else:
            return False
        self._make_room()
        stream = self._bytes.stream()
        self._bytes.warm(stream, start)
        self._cursors[entry_id] = (position, stream)
        return True

    def _make_room(self) -> None:
        """Stop following the readers seen longest ago (cancelling what was
        read ahead for them) until one more fits within ``readers``."""
        while self._cursors and len(self._cursors) >= self.readers:
            self._bytes.drop(self._cursors.popitem(last=False)[1][1])

    def in_last_block(self, entry_id: int) -> bool:
        """Whether ``entry_id`` is in the handle's last block: a reader there
        has at most a block left before it crosses into what follows."""
        return self._index.block_entries(self._index.lookup(entry_id))[1] >= self.last_entry_id

    def close(self) -> None:
        """Release the buffers and cancel whatever was read ahead."""
        self._closed = True
        self._cursors.clear()
        self._bytes.close()
        self._checkpoints.clear()
        self._checked_blocks.clear()

    # -- decoding ------------------------------------------------------------

    def _decode(
        self, block: BlockRow, entry_id: int, stop: int, position: int, out: list[Entry], stream: Stream | None
    ) -> int:
        """Append entries ``entry_id..stop`` of ``block``, the first at
        ``position``; return where the last one ends."""
        try:
            position = self._decode_entries(block, entry_id, stop, position, out, stream)
        except LostEntriesError:
            raise
        except FormatError as exc:  # the object ends early: what is past its end is lost
            failed = out[-1].entry_id + 1 if out and out[-1].entry_id >= entry_id else entry_id
            raise self._lost(str(exc), failed, block) from None
        if self._entry_offsets is None and stop > block.first_entry_id:
            self._checkpoints.add(block, stop + 1, position)
        return position

    def _decode_entries(
        self, block: BlockRow, entry_id: int, stop: int, position: int, out: list[Entry], stream: Stream | None
    ) -> int:
        block_end = self._index.block_end(block)
        ledger_id = self._ledger_id
        unpack = _ENTRY_HEADER.unpack_from
        append = out.append
        # ``Entry(...)`` goes through the named tuple's Python-level
        # ``__new__``; building the tuple directly is the same object at
        # half the cost, on the loop every entry passes through.
        make = tuple.__new__
        entry_type = Entry
        header = _HEADER
        while entry_id <= stop:
            if block_end - position < _HEADER:
                self._header_at(block, entry_id, position, block_end, stream)  # raises: it cannot fit
            buffer, at, available = self._bytes.get(position, _HEADER, stream)
            limit = at + min(available, block_end - position)
            base = position - at
            # The hot loop: whole entries in the buffered window. Anything
            # unusual (padding, a wrong id, an entry straddling the window)
            # leaves it for the checked path below.
            while entry_id <= stop and at + header <= limit:
                length, found = unpack(buffer, at)
                start = at + header
                after = start + length
                if found != entry_id or length < 0 or after > limit:
                    break
                append(make(entry_type, (ledger_id, entry_id, buffer[start:after])))
                at = after
                entry_id += 1
            position = base + at
            if entry_id > stop:
                break
            length = self._header_at(block, entry_id, position, block_end, stream)
            # The next header comes in the same request as the payload, so
            # checking what follows the entry costs no extra round trip.
            framed = _HEADER + length
            framed_and_next = framed + min(_HEADER, block_end - position - framed)
            buffer, at, _ = self._bytes.get(position, framed_and_next, stream)
            append(Entry(ledger_id, entry_id, buffer[at + _HEADER : at + framed]))
            position += framed
            entry_id += 1
        return position

    def _header_at(self, block: BlockRow, entry_id: int, position: int, block_end: int, stream: Stream | None) -> int:
        """The payload length of ``entry_id``'s header at ``position``,
        checked; raises :class:`LostEntriesError` for anything else."""
        count = min(_HEADER, block_end - position)
        if count <= 0:
            raise self._lost(self._at(position, f"entry {entry_id} is not in block {block.part_id}"), entry_id, block)
        buffer, at, _ = self._bytes.get(position, count, stream)
        try:
            length = v1.read_entry_header(buffer, at, end=at + block_end - position, expected_id=entry_id)
        except FormatError as exc:
            raise self._lost(self._at(position, str(exc)), entry_id, block) from None
        if length is None:  # padding: the entry should have been in this block and is not
            raise self._lost(self._at(position, f"entry {entry_id} is not in block {block.part_id}"), entry_id, block)
        return length

    # -- locating entries ----------------------------------------------------

    def _position(self, entry_id: int, block: BlockRow, known: int | None, stream: Stream | None) -> int:
        """Where ``entry_id``'s header starts, checking the block's header
        on the way when the read starts at the block's first entry. With
        entry offsets, the window fetched holds the whole entry and the
        header after it: one GET serves a random read."""
        if known is not None and entry_id != block.first_entry_id:
            return known
        offsets = self._entry_offsets
        number = entry_id - block.first_entry_id
        if number == 0:
            following = _HEADER if offsets is None else self._entry_bytes(offsets, block, 0, block.data_offset)
            self._check_block_header(block, stream, following)
            return block.data_offset
        if offsets is None:
            return self._walk(entry_id, block)
        position = offsets.position(block.part_id - 1, number, block.data_offset)
        self._bytes.get(position, self._entry_bytes(offsets, block, number, position), stream)
        return position

    def _entry_bytes(self, offsets: EntryOffsets, block: BlockRow, number: int, position: int) -> int:
        """Bytes from the header of a block's ``number``-th entry (at
        ``position``) to the end of the header after it."""
        end = position + _HEADER + offsets.length(block.part_id - 1, number)
        return end - position + min(_HEADER, self._index.block_end(block) - end)

    def _walk(self, entry_id: int, block: BlockRow) -> int:
        """Follow entry headers to ``entry_id`` from the closest position
        known in ``block`` (its first entry at worst)."""
        self._check_block_header(block, None, _HEADER)
        block_end = self._index.block_end(block)
        at_id, position = self._checkpoints.nearest(block, entry_id)
        while at_id < entry_id:
            length = self._header_at(block, at_id, position, block_end, None)
            position += _HEADER + length
            at_id += 1
            self._checkpoints.add(block, at_id, position)
        return position

    # -- checks --------------------------------------------------------------

    def _check_block_header(self, block: BlockRow, stream: Stream | None, following: int) -> None:
        """Decode ``block``'s header the first time it is touched and check
        it against the index row: magic, header length, block length and
        first entry id (and zero fill in a v1 block). The GET that brings the header also
        brings at least ``following`` bytes after it."""
        if block.part_id in self._checked_blocks:
            return
        expected_length = self._index.block_end(block) - block.offset
        header_length = block.data_offset - block.offset
        if expected_length < header_length:
            raise self._lost(
                self._at(
                    block.offset,
                    f"block {block.part_id} is cut short: the index's data object length "
                    f"({self._index.data_object_length}) leaves it no room for a header (Pulsar writes this when an "
                    "entry is larger than a block)",
                ),
                block.first_entry_id,
                block,
            )
        wanted = min(header_length + following, expected_length)
        buffer, at, _ = self._bytes.get(block.offset, wanted, stream)
        try:
            self._index.check_header(memoryview(buffer)[at : at + header_length], block)
        except FormatError as exc:
            raise self._lost(self._at(block.offset, str(exc)), block.first_entry_id, block) from None
        self._checked_blocks.add(block.part_id)

    def _check_what_follows(self, entry_id: int, position: int, stream: Stream | None) -> None:
        """After ``entry_id`` (ending at ``position``) comes the block's end,
        padding, or the header of entry ``entry_id + 1`` fitting the block;
        anything else means the entry's length field is wrong. The
        ledger's last entry, and the last of a block (the next block
        starts with the next entry), are followed by padding only, so a
        lowered ``lastEntryId`` cannot silently drop entries."""
        block = self._index.lookup(entry_id)
        remaining = self._index.block_end(block) - position
        if remaining == 0:
            return
        try:
            buffer, at, _ = self._bytes.get(position, min(remaining, _HEADER), stream)
        except FormatError as exc:
            raise self._lost(str(exc), entry_id, block) from None
        peek = buffer[at : at + min(remaining, _HEADER)]
        if remaining < 4 or struct.unpack_from(">i", peek)[0] < 0:
            if peek[:4] != v1.PADDING[: len(peek[:4])]:
                raise self._lost(self._at(position, f"after entry {entry_id} comes neither an entry nor padding"),
                                 entry_id, block)  # fmt: skip
            return
        if entry_id == self.last_entry_id or entry_id + 1 in self._index.block_starts:
            whose = "the ledger's last entry" if entry_id == self.last_entry_id else "its block's last entry"
            raise self._lost(
                self._at(position, f"after entry {entry_id}, {whose}, comes another entry header instead of padding "
                                   "(the ledger metadata's lastEntryId or the index's block table is wrong)"),
                entry_id, block,
            )  # fmt: skip
        if remaining < _HEADER:
            raise self._lost(self._at(position, f"after entry {entry_id} an entry header is cut off by the block's "
                                                "end"), entry_id, block)  # fmt: skip
        length, next_id = _ENTRY_HEADER.unpack_from(peek)
        if next_id != entry_id + 1 or _HEADER + length > remaining:
            raise self._lost(
                self._at(position, f"after entry {entry_id} comes an entry header (id {next_id}, {length} bytes) "
                                   "that does not follow it: the framing is broken"),
                entry_id, block,
            )  # fmt: skip

    # -- errors --------------------------------------------------------------

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
        return FormatError(self._at(position, problem))
