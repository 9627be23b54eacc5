"""The entry-offsets section: where every entry of a data object starts,
so that a cold random read costs one ranged GET instead of a walk over
entry headers from its block's start.

Our own format, versioned by its magic. Pulsar's newest index builder
(``OffloadIndexBlockV2BuilderImpl.addEntryOffset``) appends a per-entry
directory after the block table, but its sources do not give the layout
whole (the directory magic and how the index length counts it are not in
them), so we do not claim to write it. Ours is smaller (4 bytes an entry
instead of 16) and carries its own checksum.

Layout (big-endian, like everything Pulsar writes)::

    magic          u32   0x0E0FF5E1  (version 1)
    length         u32   bytes after this field, checksum included
    block count    u32
    per block:     u32 entry count, then that many u32 payload lengths
    checksum       u32   CRC-32C of every byte before it, magic included

Payload lengths are the deltas between consecutive entry offsets: entry
``i`` of a block starts at ``data_offset + sum(12 + length[j] for j < i)``,
and the last length tells where the block's entries end, which a list of
offsets alone would not. Where the section lives is up to the object
format: after the v1 index's block table (Pulsar's v1 reader reads exactly
``block count`` rows and ignores what follows), or after a v2 segment's
blocks, past the data object length its index records (Pulsar's v2 reader
reads the index to its end, so nothing may follow it there, but reads the
data object only up to that length). Segments written before the section
moved there have it in a companion object, ``{uuid}-entry-offsets``.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import google_crc32c

from ..errors import FormatError
from .pulsar_v1 import ENTRY_HEADER_LENGTH

__all__ = ["MAGIC", "EntryOffsets", "decode_section", "encode_section", "is_section"]

MAGIC = 0x0E0FF5E1
_HEAD = struct.Struct(">III")
_U32 = struct.Struct(">I")
_MAX_LENGTH = 2**31 - 1


@dataclass(frozen=True)
class EntryOffsets:
    """Every block's payload lengths, in block order; ``lengths`` is one
    flat array and block ``n`` owns ``lengths[starts[n]:starts[n + 1]]``."""

    lengths: array[int]
    starts: tuple[int, ...]

    @property
    def block_count(self) -> int:
        return len(self.starts) - 1

    def entry_count(self, block: int) -> int:
        """How many entries block ``block`` (0-based) holds."""
        return self.starts[block + 1] - self.starts[block]

    def block_lengths(self, block: int) -> Sequence[int]:
        return self.lengths[self.starts[block] : self.starts[block + 1]]

    def position(self, block: int, number: int, data_offset: int) -> int:
        """Where the header of entry ``number`` (0-based) of block ``block``
        starts, given where the block's first entry starts; ``number`` may
        be the block's entry count (where its last entry ends). One C-level
        sum over the lengths before it, no per-entry table."""
        first = self.starts[block]
        return data_offset + ENTRY_HEADER_LENGTH * number + sum(self.lengths[first : first + number])

    def length(self, block: int, number: int) -> int:
        """The payload length of entry ``number`` of block ``block``."""
        return self.lengths[self.starts[block] + number]

    def content_length(self, block: int) -> int:
        """Bytes the block's framed entries take (headers and payloads)."""
        return sum(self.block_lengths(block)) + ENTRY_HEADER_LENGTH * self.entry_count(block)


def encode_section(blocks: Sequence[Sequence[int]]) -> bytes:
    """The section for ``blocks``, each a sequence of its entries' payload
    lengths. Raises :class:`FormatError` for a length that is negative or
    over the format's 2^31 - 1."""
    body = bytearray(_U32.pack(len(blocks)))
    for lengths in blocks:
        body += _U32.pack(len(lengths))
        packed = array("I", lengths) if lengths else array("I")
        if packed and max(packed) > _MAX_LENGTH:
            raise FormatError(f"an entry of {max(packed)} bytes is over the format's limit of 2^31-1")
        if sys.byteorder == "little":
            packed.byteswap()
        body += packed.tobytes()
    head = _U32.pack(MAGIC) + _U32.pack(len(body) + _U32.size)
    checksum = google_crc32c.value(head + body)
    return bytes(head + body + _U32.pack(checksum))


def is_section(data: bytes | memoryview) -> bool:
    """Whether ``data`` starts with this section's magic (other bytes after
    an index, such as Pulsar's own per-entry directory, are not ours)."""
    return len(data) >= 4 and _U32.unpack_from(data)[0] == MAGIC


def decode_section(data: bytes | memoryview) -> EntryOffsets:
    """Parse a section that must fill ``data`` exactly. Raises
    :class:`FormatError` for a wrong magic, a length or count that does not
    fit, a checksum mismatch, or a payload length over 2^31 - 1."""
    view = memoryview(data)
    if len(view) < _HEAD.size + _U32.size:
        raise FormatError(f"entry-offsets section needs at least {_HEAD.size + _U32.size} bytes, got {len(view)}")
    magic, length, block_count = _HEAD.unpack_from(view)
    if magic != MAGIC:
        raise FormatError(f"entry-offsets section magic is {magic:#010x}, expected {MAGIC:#010x}")
    if length != len(view) - 8:
        raise FormatError(f"entry-offsets section says {length} bytes follow its header, {len(view) - 8} do")
    (checksum,) = _U32.unpack_from(view, len(view) - 4)
    if google_crc32c.value(bytes(view[:-4])) != checksum:
        raise FormatError("entry-offsets section fails its CRC-32C check")
    position, end = _HEAD.size, len(view) - 4
    starts = [0]
    chunks: list[memoryview] = []
    for block in range(block_count):
        if end - position < 4:
            raise FormatError(f"entry-offsets section: block {block}'s entry count is cut off")
        (count,) = _U32.unpack_from(view, position)
        position += 4
        if count * 4 > end - position:
            raise FormatError(f"entry-offsets section: block {block}'s {count} lengths run past the section")
        chunks.append(view[position : position + 4 * count])
        position += 4 * count
        starts.append(starts[-1] + count)
    if position != end:
        raise FormatError(f"entry-offsets section has {end - position} bytes after its {block_count} blocks")
    lengths = array("I")
    for chunk in chunks:
        lengths.frombytes(chunk)
    # Big-endian, so a length over 2^31 - 1 is one whose first byte is 0x80 or more.
    if not lengths.tobytes()[::4].isascii():
        if sys.byteorder == "little":
            lengths.byteswap()
        raise FormatError(f"entry-offsets section gives an entry of {max(lengths)} bytes, over 2^31-1")
    if sys.byteorder == "little":
        lengths.byteswap()
    return EntryOffsets(lengths, tuple(starts))
