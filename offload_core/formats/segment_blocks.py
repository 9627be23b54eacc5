"""The data object of a PIP-76 segment: its blocks, how entries are
grouped into them, and their header. Pure: no I/O. The layout is described
in :mod:`offload_core.formats.pulsar_v2`, which re-exports this module."""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate

from ..errors import FormatError
from . import pulsar_v1 as v1
from .kept_payloads import may_keep
from .segment_block_header import (
    BLOCK_HEADER_LENGTH,
    BLOCK_MAGIC,
    StreamingBlockHeader,
    decode_block_header,
    encode_block_header,
)
from .segment_index import SegmentRow

__all__ = [
    "BLOCK_HEADER_LENGTH",
    "BLOCK_MAGIC",
    "BlockGrouper",
    "EncodedSegmentBlock",
    "SegmentBlock",
    "StreamingBlockHeader",
    "decode_block",
    "decode_block_header",
    "encode_block_header",
    "encode_segment_blocks",
    "streaming_block_length",
]

_ENTRY_HEADER = struct.Struct(">iq")
_INT32_MAX = 2**31 - 1


# -- data blocks ----------------------------------------------------------


def streaming_block_length(streaming_block_size: int, entry_count: int, payload_bytes: int) -> int:
    """A block's length: the streaming block size, or exactly its content
    when that is longer."""
    return max(streaming_block_size, BLOCK_HEADER_LENGTH + entry_count * v1.ENTRY_HEADER_LENGTH + payload_bytes)


@dataclass(frozen=True)
class EncodedSegmentBlock:
    """One finished block of a segment: its ledger, its index row, its last
    entry, its payload bytes, and ``data``, its bytes."""

    ledger_id: int
    row: SegmentRow
    last_entry_id: int
    payload_bytes: int
    data: bytes
    entry_lengths: Sequence[int] = ()


class BlockGrouper:
    """Cuts a stream of ``(ledger id, entry id, payload)`` into segment
    blocks, holding at most one open block (a streaming block size plus one
    entry) in memory.

    Raises :class:`FormatError` for an entry that does not continue its
    ledger (entry ids run consecutively within a ledger), for a ledger that
    comes back after another ledger, and for an entry over 2^31-1 bytes.
    """

    def __init__(self, streaming_block_size: int) -> None:
        if streaming_block_size < BLOCK_HEADER_LENGTH + v1.ENTRY_HEADER_LENGTH:
            raise FormatError(f"streaming block size {streaming_block_size} cannot hold a header and an entry")
        self._size = streaming_block_size
        # The open block, as the pieces its bytes will be joined from when
        # it finishes (one copy): entry headers and payloads the caller
        # cannot change (``bytes``), or stretches framed into bytes of our
        # own. None when no block is open.
        self._pieces: list[bytes | memoryview] | None = None
        self._open_length = 0
        self._ledger_id = -1
        self._first_entry_id = 0
        self._next_entry_id = 0
        self._payload = 0
        self._offset = 0
        self._part_id = 1
        self._ledgers_done: set[int] = set()
        self._lengths: list[int] = []

    @property
    def offset(self) -> int:
        """Bytes of finished blocks so far (where the next block starts)."""
        return self._offset

    @property
    def open_block_bytes(self) -> int:
        """Bytes of the block being filled (0 when none is open)."""
        return self._open_length

    def add(self, ledger_id: int, entry_id: int, payload: bytes | memoryview) -> Sequence[EncodedSegmentBlock]:
        """Add one entry; return the blocks it finished (none, the open one
        of a previous ledger, this entry's own, or both)."""
        return self.add_run(ledger_id, entry_id, (payload,))[1]

    def _add_first(self, ledger_id: int, entry_id: int, payload: bytes | memoryview) -> list[EncodedSegmentBlock]:
        """Add an entry that does not continue the open block: checked (one
        over 2^31-1 bytes or out of order is refused), the open block
        (another ledger's) finished, a block opened for it."""
        size = len(payload)
        if size > _INT32_MAX:
            raise FormatError(f"entry {ledger_id}:{entry_id} is {size} bytes; the format's limit is 2^31-1")
        finished: list[EncodedSegmentBlock] = []
        if ledger_id != self._ledger_id:
            if ledger_id in self._ledgers_done or ledger_id < 0 or entry_id < 0:
                raise FormatError(
                    f"entry {ledger_id}:{entry_id} cannot start a block: a segment holds each ledger's entries in "
                    "one consecutive run, and ids are never negative"
                )
            if self._pieces is not None:
                finished.append(self._finish())
            if self._ledger_id >= 0:
                self._ledgers_done.add(self._ledger_id)
            self._ledger_id, self._next_entry_id = ledger_id, entry_id
        elif entry_id != self._next_entry_id:
            raise FormatError(
                f"entry {ledger_id}:{entry_id} does not follow entry {ledger_id}:{self._next_entry_id - 1}; entries "
                "of a ledger are offered in order, without gaps"
            )
        pieces = self._open_block(entry_id) if self._pieces is None else self._pieces
        pieces.append(_ENTRY_HEADER.pack(len(payload), entry_id))
        pieces.append(payload if type(payload) is bytes else bytes(payload))
        self._open_length += v1.ENTRY_HEADER_LENGTH + len(payload)
        self._lengths.append(len(payload))
        self._payload += len(payload)
        self._next_entry_id = entry_id + 1
        if self._payload >= self._size:
            finished.append(self._finish())
        return finished

    def add_run(
        self,
        ledger_id: int,
        first_entry_id: int,
        payloads: Sequence[bytes | memoryview],
        *,
        room: int | None = None,
        fill_open_block: bool = False,
        stop_at: int | None = None,
    ) -> tuple[int, list[EncodedSegmentBlock]]:
        """Add consecutive entries of one ledger (ids from ``first_entry_id``),
        as :meth:`add` would one by one, as many as the limits allow:

        - ``room``: entries are taken while their framing (entry header,
          payload, and a block header for each block they open) fits in
          ``room`` bytes; with ``fill_open_block``, entries are taken
          whatever the room until a block finishes (a caller holding
          nothing else must be able to finish a block);
        - ``stop_at``: no entry after the one that brings the segment
          (:attr:`offset` plus the open block) to ``stop_at`` bytes.

        Returns how many were taken and the blocks they finished. Raises
        :class:`FormatError` as :meth:`add` does, before taking the
        offending entry (entries before it are taken and returned)."""
        finished: list[EncodedSegmentBlock] = []
        count = len(payloads)
        if not count:
            return 0, finished
        free = fill_open_block
        taken = 0
        if not (self._pieces is not None and ledger_id == self._ledger_id and first_entry_id == self._next_entry_id):
            cost = BLOCK_HEADER_LENGTH + v1.ENTRY_HEADER_LENGTH + len(payloads[0])
            if self._pieces is not None:  # the open block finishes first, padded to the block size
                cost += max(self._size - self._open_length, 0)
            if room is not None and cost > room and not free:
                return 0, finished
            done = self._add_first(ledger_id, first_entry_id, payloads[0])
            taken = 1
            if room is not None:
                room -= cost
            if done:
                finished.extend(done)
                free = False
            if stop_at is not None and self._offset + self.open_block_bytes >= stop_at:
                return taken, finished
        if taken == count:
            return taken, finished
        taken += self._add_stretches(payloads, taken, room, free, stop_at, finished)
        return taken, finished

    def _add_stretches(
        self,
        payloads: Sequence[bytes | memoryview],
        start: int,
        room: int | None,
        free: bool,
        stop_at: int | None,
        finished: list[EncodedSegmentBlock],
    ) -> int:
        """The rest of :meth:`add_run`: ``payloads[start:]`` continue the
        open block's ledger (or open the next block of it). Framed a
        stretch at a time (the entries up to the end of a block, of the
        room, or of the segment), located by bisecting running sums, so
        that the per-entry work runs in C; takes exactly what a loop
        applying the limits entry by entry takes. Returns how many."""
        lengths = list(map(len, payloads))
        limit = len(lengths)
        # payload_sums[j]: the payload bytes of the entries before j; with
        # their entry headers, framed(j).
        payload_sums = list(accumulate(lengths, initial=0))
        # A batch adding up to no more than the limit holds no entry over it.
        if payload_sums[-1] - payload_sums[start] > _INT32_MAX and max(lengths[start:]) > _INT32_MAX:
            limit = next(at for at in range(start, limit) if lengths[at] > _INT32_MAX)
            if limit == start == 0:
                self._add_first(self._ledger_id, self._next_entry_id, payloads[0])  # raises

        def framed(j: int) -> int:
            return payload_sums[j] + v1.ENTRY_HEADER_LENGTH * j

        pieces = self._pieces
        payload_bytes = self._payload
        entry_id = self._next_entry_id
        at = start
        while at < limit:
            opens = pieces is None
            header = BLOCK_HEADER_LENGTH if opens else 0
            if opens:
                payload_bytes = 0
            # The stretch is entries at..end-1; the block finishes with the
            # entry whose payload reaches the block size.
            end = bisect_left(payload_sums, self._size - payload_bytes + payload_sums[at], at + 1, limit + 1)
            finishes = end <= limit
            end = min(end, limit)
            # The limits bind rarely: bisected (over framed(j), computed
            # as needed) only when the whole stretch would pass them.
            if room is not None and not free and header + framed(end) - framed(at) > room:
                end = bisect_right(range(end + 1), room - header + framed(at), at, end + 1, key=framed) - 1
                finishes = False
                if end <= at:
                    break
            stops = False
            if stop_at is not None:
                length = BLOCK_HEADER_LENGTH if pieces is None else self._open_length
                target = stop_at - self._offset - length + framed(at)
                if framed(end) >= target:
                    stops = True
                    reaches = bisect_left(range(end + 1), target, at + 1, end + 1, key=framed)
                    if reaches < end:
                        end, finishes = reaches, False
            if pieces is None:
                pieces = self._open_block(entry_id)
            parts: list[bytes | memoryview] = [b""] * (2 * (end - at))
            parts[::2] = map(_ENTRY_HEADER.pack, lengths[at:end], range(entry_id, entry_id + end - at))
            stretch = payloads[at:end]
            parts[1::2] = stretch
            if may_keep(stretch, payload_sums[end] - payload_sums[at]):
                pieces += parts  # cannot change: joined once, when the block finishes
            else:
                pieces.append(b"".join(parts))  # may change, or would hold on to more: copied now
            self._open_length += framed(end) - framed(at)
            self._lengths.extend(lengths[at:end])
            payload_bytes += payload_sums[end] - payload_sums[at]
            if room is not None:
                room -= header + framed(end) - framed(at)
            entry_id += end - at
            at = end
            if finishes:
                self._payload, self._next_entry_id = payload_bytes, entry_id
                finished.append(self._finish())
                pieces, payload_bytes, free = None, 0, False
            if stops:
                break
        self._payload, self._next_entry_id = payload_bytes, entry_id
        return at - start

    def _open_block(self, entry_id: int) -> list[bytes | memoryview]:
        """Open a block whose first entry is ``entry_id``; its pieces."""
        pieces: list[bytes | memoryview] = []
        self._pieces = pieces
        self._open_length = BLOCK_HEADER_LENGTH
        self._first_entry_id, self._payload = entry_id, 0
        self._lengths = []
        return pieces

    def finish(self) -> EncodedSegmentBlock | None:
        """Close the open block, if any (the segment is closing)."""
        return self._finish() if self._pieces is not None else None

    def _finish(self) -> EncodedSegmentBlock:
        pieces = self._pieces
        assert pieces is not None
        length = max(self._size, self._open_length)
        header = encode_block_header(StreamingBlockHeader(length, self._first_entry_id, self._ledger_id))
        # A join of bytes only lets the interpreter go while it copies (the
        # upload thread runs meanwhile instead of at the next forced
        # switch); with views among the pieces it keeps it, and the copy it
        # saves over framing them when offered is worth more (bench/README).
        block = b"".join([header, *pieces, v1.padding(length - self._open_length)])
        encoded = EncodedSegmentBlock(
            ledger_id=self._ledger_id,
            row=SegmentRow(self._first_entry_id, self._part_id, self._offset),
            last_entry_id=self._next_entry_id - 1,
            payload_bytes=self._payload,
            data=block,
            entry_lengths=array("I", self._lengths),  # kept until the index is written: 4 bytes an entry
        )
        self._pieces = None
        self._open_length = 0
        self._offset += length
        self._part_id += 1
        return encoded


def encode_segment_blocks(
    entries: Iterable[tuple[int, int, bytes | memoryview]], *, streaming_block_size: int
) -> Iterator[EncodedSegmentBlock]:
    """The blocks of a segment holding ``entries`` (``(ledger id, entry id,
    payload)`` in order), lazily, one open block in memory."""
    grouper = BlockGrouper(streaming_block_size)
    for ledger_id, entry_id, payload in entries:
        yield from grouper.add(ledger_id, entry_id, payload)
    last = grouper.finish()
    if last is not None:
        yield last


@dataclass(frozen=True)
class SegmentBlock:
    """A decoded segment block: its header, its entries, where padding starts."""

    header: StreamingBlockHeader
    entries: tuple[tuple[int, bytes], ...]
    padding_start: int

    @property
    def last_entry_id(self) -> int:
        """Id of the block's last entry; ``first_entry_id - 1`` if it has none."""
        return self.header.first_entry_id + len(self.entries) - 1


def decode_block(data: bytes | memoryview) -> SegmentBlock:
    """Decode one whole segment block (exactly ``block_length`` bytes), with
    the same framing and padding checks as :func:`pulsar_v1.decode_block`.
    A streaming block always holds at least one entry."""
    view = memoryview(data)
    header = decode_block_header(view)
    if header.block_length != len(view):
        raise FormatError(f"block header says {header.block_length} bytes, but the block has {len(view)}")
    entries, padding_start = v1.decode_block_body(view, header.first_entry_id, start=header.header_length)
    if not entries:
        raise FormatError(f"segment block of ledger {header.ledger_id} holds no entry")
    return SegmentBlock(header=header, entries=entries, padding_start=padding_start)
