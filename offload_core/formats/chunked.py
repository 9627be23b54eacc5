"""A transformed object: its logical bytes cut into fixed-size chunks, each
stored transformed, then a footer that maps chunks to stored ranges (as
Aiven's segment manifest does) and binds every chunk to its object. Pure.

Layout (big-endian)::

    stored chunk 0 | stored chunk 1 | ... | footer

    footer v2 = magic u32 0xC7C7ED02 | object id (16 bytes) | chunk size u32 |
                logical size u64 | chunk count u32 |
                count x (stored length u32 | chunk CRC-32C u32) |
                CRC-32C u32 (of the footer up to here) | footer length u32

    chunk CRC-32C = CRC-32C of object id | chunk index u64 | stored chunk

The object id is random, one per object written (the writer draws it; this
module only records it). Because each chunk's CRC covers it, a chunk
copied from another object, to the same position or another, with or
without its entry in the table, fails its check whatever the object's
transforms: even a chain with no check of its own (zstd) cannot return
another object's bytes. The transforms get the id too, so their own checks
(crc32c, aes-gcm) cover it as well. The footer lives in the object's bytes
rather than its metadata because metadata is replaced in place (key
rotation, a copy that sets new metadata) and the chunks must stay bound.

Footer v1 (magic ``0xC7C7ED01``), written by offload-core before chunks
were bound, is read and never written: ``count x stored length u32`` in
place of the entries, no object id (:attr:`ChunkTable.object_id` is
``None``) and so nothing binds its chunks to it.

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

__all__ = [
    "FOOTER_TAIL",
    "MAGIC",
    "MAGIC_V1",
    "OBJECT_ID_SIZE",
    "ChunkTable",
    "check_chunk",
    "chunk_crc",
    "decode_footer",
    "encode_footer",
    "footer_length",
]

MAGIC = 0xC7C7ED02
MAGIC_V1 = 0xC7C7ED01
OBJECT_ID_SIZE = 16
_MAGIC = struct.Struct(">I")
_HEAD = struct.Struct(f">I{OBJECT_ID_SIZE}sIQI")
_HEAD_V1 = struct.Struct(">IIQI")
_TAIL = struct.Struct(">II")
FOOTER_TAIL = _TAIL.size
_MAX_CHUNK_SIZE = 2**31 - 1


@dataclass(frozen=True)
class ChunkTable:
    """Where each chunk of a transformed object is stored, and what binds it
    to the object: ``object_id`` and each chunk's :func:`chunk_crc`
    (``None`` and no CRCs for a v1 table, whose chunks nothing binds)."""

    chunk_size: int
    logical_size: int
    stored_lengths: tuple[int, ...]
    object_id: bytes | None
    chunk_crcs: tuple[int, ...]

    @property
    def starts(self) -> tuple[int, ...]:
        """Stored offset of each chunk, and where the footer begins."""
        return (0, *accumulate(self.stored_lengths))

    def chunks_for(self, start: int, end: int) -> range:
        """The chunks holding logical bytes ``[start, end)``."""
        if end <= start:
            return range(0)
        return range(start // self.chunk_size, (end - 1) // self.chunk_size + 1)


def chunk_crc(object_id: bytes, index: int, stored: bytes) -> int:
    """The CRC-32C the table records for chunk ``index`` of object
    ``object_id`` stored as ``stored``."""
    return int(google_crc32c.extend(google_crc32c.value(object_id + index.to_bytes(8, "big")), stored))


def check_chunk(table: ChunkTable, index: int, stored: bytes, *, key: str = "object") -> None:
    """Raises :class:`FormatError` naming ``key`` unless ``stored`` is the
    chunk ``index`` the table (v2) recorded for its object: a damaged chunk,
    or one moved from another index or copied from another object. A v1
    table has nothing to check."""
    if table.object_id is not None and chunk_crc(table.object_id, index, stored) != table.chunk_crcs[index]:
        raise FormatError(f"{key}: chunk {index} fails the CRC-32C its chunk table records: the chunk is damaged "
                          "or was moved there (from another place or another object); restore the object from a "
                          "good copy")  # fmt: skip


def _expected_chunks(chunk_size: int, logical_size: int) -> int:
    return -(-logical_size // chunk_size) if chunk_size else -1


def encode_footer(table: ChunkTable) -> bytes:
    """The v2 footer of ``table``; :class:`FormatError` for a table that is
    not consistent (a chunk count that does not cover the logical size, an
    object id that is not 16 bytes, a CRC missing for a chunk)."""
    count = len(table.stored_lengths)
    if not 0 < table.chunk_size <= _MAX_CHUNK_SIZE or _expected_chunks(table.chunk_size, table.logical_size) != count:
        raise FormatError(f"chunk table of {count} chunks does not cover "
                          f"{table.logical_size} bytes in chunks of {table.chunk_size}")  # fmt: skip
    if table.object_id is None or len(table.object_id) != OBJECT_ID_SIZE or len(table.chunk_crcs) != count:
        raise FormatError(f"a chunk table is written with a {OBJECT_ID_SIZE}-byte object id and a CRC per chunk")
    entries = [value for pair in zip(table.stored_lengths, table.chunk_crcs, strict=True) for value in pair]
    try:
        packed = struct.pack(f">{2 * count}I", *entries)
    except struct.error:
        raise FormatError("a stored chunk is larger than 4 GiB or negative, or a CRC is not 32 bits") from None
    body = _HEAD.pack(MAGIC, table.object_id, table.chunk_size, table.logical_size, count) + packed
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
    ``stored_size`` bytes (at least the whole footer), v2 or v1. Raises
    :class:`FormatError` naming ``key`` for a damaged or inconsistent footer."""
    length = footer_length(tail)
    if length < _HEAD_V1.size + _TAIL.size or length > len(tail) or length > stored_size:
        raise FormatError(f"{key}: footer length {length} does not fit the object ({stored_size} bytes)")
    footer = tail[len(tail) - length :]
    body, (crc, _) = footer[: -_TAIL.size], _TAIL.unpack_from(footer, length - _TAIL.size)
    if google_crc32c.value(body) != crc:
        raise FormatError(f"{key}: its chunk table fails its CRC-32C: the object is damaged")
    (magic,) = _MAGIC.unpack_from(body)
    head = {MAGIC: _HEAD, MAGIC_V1: _HEAD_V1}.get(magic)
    if head is None:
        raise FormatError(f"{key}: not a chunk table this offload-core reads (magic {magic:#x}): "
                          "upgrade offload-core if a newer one wrote it")  # fmt: skip
    if len(body) < head.size:
        raise FormatError(f"{key}: its chunk table is {len(body)} bytes, too short for its header: damaged")
    if head is _HEAD:
        _, object_id, chunk_size, logical_size, count = _HEAD.unpack_from(body)
    else:
        object_id = None
        _, chunk_size, logical_size, count = _HEAD_V1.unpack_from(body)
    per_chunk = 1 if object_id is None else 2  # v1: a length; v2: a length and a CRC
    if len(body) != head.size + 4 * per_chunk * count:
        raise FormatError(f"{key}: not a chunk table ({count} chunks in {len(body)} bytes): the object is damaged")
    entries = struct.unpack_from(f">{per_chunk * count}I", body, head.size)
    lengths, crcs = (entries, ()) if object_id is None else (entries[0::2], entries[1::2])
    table = ChunkTable(chunk_size, logical_size, tuple(lengths), object_id, tuple(crcs))
    if _expected_chunks(chunk_size, logical_size) != count:
        raise FormatError(f"{key}: {count} chunks of {chunk_size} bytes cannot hold {logical_size} bytes")
    if table.starts[-1] + length != stored_size:
        raise FormatError(f"{key}: chunks and footer take {table.starts[-1] + length} bytes, the object {stored_size}")
    return table
