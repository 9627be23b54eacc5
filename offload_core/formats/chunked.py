"""A transformed object: its logical bytes cut into fixed-size chunks, each
stored transformed, then a footer that maps chunks to stored ranges (as
Aiven's segment manifest does). Pure.

Layout (big-endian)::

    stored chunk 0 | stored chunk 1 | ... | footer

    footer = magic u32 0xC7C7ED01 | chunk size u32 | logical size u64 |
             chunk count u32 | count x stored length u32 |
             CRC-32C u32 (of the footer up to here) | footer length u32

The footer's last four bytes give its length, so a reader that knows the
stored size finds it with one read of the object's tail. Chunk ``i`` holds
logical bytes ``[i * chunk size, min((i + 1) * chunk size, logical size))``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from itertools import accumulate

import google_crc32c

from ..errors import FormatError

__all__ = ["FOOTER_TAIL", "MAGIC", "ChunkTable", "decode_footer", "encode_footer"]

MAGIC = 0xC7C7ED01
_HEAD = struct.Struct(">IIQI")
_TAIL = struct.Struct(">II")
FOOTER_TAIL = _TAIL.size
_MAX_CHUNK_SIZE = 2**31 - 1


@dataclass(frozen=True)
class ChunkTable:
    """Where each chunk of a transformed object is stored."""

    chunk_size: int
    logical_size: int
    stored_lengths: tuple[int, ...]

    @property
    def starts(self) -> tuple[int, ...]:
        """Stored offset of each chunk, and where the footer begins."""
        return (0, *accumulate(self.stored_lengths))

    def chunks_for(self, start: int, end: int) -> range:
        """The chunks holding logical bytes ``[start, end)``."""
        if end <= start:
            return range(0)
        return range(start // self.chunk_size, (end - 1) // self.chunk_size + 1)


def encode_footer(table: ChunkTable) -> bytes:
    """The footer of ``table``; :class:`FormatError` for a table that is not
    consistent (a chunk count that does not cover the logical size)."""
    expected = -(-table.logical_size // table.chunk_size) if table.chunk_size else -1
    if not 0 < table.chunk_size <= _MAX_CHUNK_SIZE or expected != len(table.stored_lengths):
        raise FormatError(f"chunk table of {len(table.stored_lengths)} chunks does not cover "
                          f"{table.logical_size} bytes in chunks of {table.chunk_size}")  # fmt: skip
    count = len(table.stored_lengths)
    try:
        lengths = struct.pack(f">{count}I", *table.stored_lengths)
    except struct.error:
        raise FormatError("a stored chunk is larger than 4 GiB or negative") from None
    body = _HEAD.pack(MAGIC, table.chunk_size, table.logical_size, count) + lengths
    crc = google_crc32c.value(body)
    return body + _TAIL.pack(crc, len(body) + _TAIL.size)


def footer_length(tail: bytes) -> int:
    """The footer's length, from the object's last four bytes at least."""
    if len(tail) < FOOTER_TAIL:
        raise FormatError("transformed object is shorter than its footer")
    (length,) = struct.unpack_from(">I", tail, len(tail) - 4)
    return int(length)


def decode_footer(tail: bytes, stored_size: int, *, key: str = "object") -> ChunkTable:
    """The chunk table from ``tail``, the last bytes of an object of
    ``stored_size`` bytes (at least the whole footer). Raises
    :class:`FormatError` naming ``key`` for a damaged or inconsistent footer."""
    length = footer_length(tail)
    if length < _HEAD.size + _TAIL.size or length > len(tail) or length > stored_size:
        raise FormatError(f"{key}: footer length {length} does not fit the object ({stored_size} bytes)")
    footer = tail[len(tail) - length :]
    body, (crc, _) = footer[: -_TAIL.size], _TAIL.unpack_from(footer, length - _TAIL.size)
    if google_crc32c.value(body) != crc:
        raise FormatError(f"{key}: its chunk table fails its CRC-32C: the object is damaged")
    magic, chunk_size, logical_size, count = _HEAD.unpack_from(body)
    if magic != MAGIC or len(body) != _HEAD.size + 4 * count:
        raise FormatError(f"{key}: not a chunk table (magic {magic:#x}, {count} chunks in {len(body)} bytes)")
    lengths = struct.unpack_from(f">{count}I", body, _HEAD.size)
    table = ChunkTable(chunk_size, logical_size, tuple(lengths))
    if chunk_size == 0 or -(-logical_size // chunk_size) != count:
        raise FormatError(f"{key}: {count} chunks of {chunk_size} bytes cannot hold {logical_size} bytes")
    if table.starts[-1] + length != stored_size:
        raise FormatError(f"{key}: chunks and footer take {table.starts[-1] + length} bytes, the object {stored_size}")
    return table
