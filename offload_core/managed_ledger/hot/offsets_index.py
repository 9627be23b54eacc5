"""The offsets index of a sealed hot-tier ledger file. Pure.

A sealed ledger never changes, so where each entry starts is written once,
beside it (``{ledger file}.idx``), and reopening it costs one small read
instead of a scan of every record (which re-reads and re-checksums every
payload). The offsets are kept in checksummed chunks, so that opening reads
only the header and a read loads only the chunk it needs: the first read
after an open costs the same for a ledger of any size. Layout, big-endian::

    b"OLIDX002" | int64 ledger id | int64 entry count | int64 data end
    | int64 payload bytes | int32 entries per chunk | uint32 crc32 (of the header)
    then per chunk: up to ``entries per chunk`` x int64 record offset | uint32 crc32

The index is trusted only when its header decodes, its CRC matches, it
names the same ledger, and its data end is the file's size; otherwise the
ledger file is scanned and the index rewritten. A chunk is trusted only
when its CRC matches and its offsets rise inside the file. Each entry's own
CRC is still checked when the entry is read. (``OLIDX001``, the unchunked
first version, is not read: such a ledger is scanned once and re-indexed.)
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from dataclasses import dataclass

from ...errors import FormatError

__all__ = [
    "CHUNK_ENTRIES",
    "HEADER_SIZE",
    "OffsetsHeader",
    "OffsetsIndex",
    "chunk_span",
    "decode_offsets_chunk",
    "decode_offsets_header",
    "decode_offsets_index",
    "encode_offsets_index",
    "index_size",
]

_MAGIC = b"OLIDX002"
_HEAD = struct.Struct(">8sqqqqi")
_CRC = struct.Struct(">I")
_OFFSET_SIZE = 8
HEADER_SIZE = _HEAD.size + _CRC.size
CHUNK_ENTRIES = 4096
"""Offsets per chunk: 32 KiB read for the first access to any entry."""


@dataclass(frozen=True)
class OffsetsIndex:
    """Where each record of a sealed ledger file starts, and its totals."""

    ledger_id: int
    offsets: array[int]
    data_end: int
    payload_bytes: int


@dataclass(frozen=True)
class OffsetsHeader:
    """What an index's header says."""

    ledger_id: int
    entry_count: int
    data_end: int
    payload_bytes: int
    chunk_entries: int

    @property
    def chunks(self) -> int:
        return -(-self.entry_count // self.chunk_entries)


def _big_endian(values: array[int]) -> bytes:
    copy = array("q", values)
    if sys.byteorder == "little":
        copy.byteswap()
    return copy.tobytes()


def encode_offsets_index(index: OffsetsIndex, *, chunk_entries: int = CHUNK_ENTRIES) -> bytes:
    """The index file's bytes."""
    head = _HEAD.pack(_MAGIC, index.ledger_id, len(index.offsets), index.data_end, index.payload_bytes, chunk_entries)
    out = bytearray(head + _CRC.pack(zlib.crc32(head)))
    for start in range(0, len(index.offsets), chunk_entries):
        chunk = _big_endian(index.offsets[start : start + chunk_entries])
        out += chunk + _CRC.pack(zlib.crc32(chunk))
    return bytes(out)


def decode_offsets_header(data: bytes) -> OffsetsHeader:
    """Parse the first :data:`HEADER_SIZE` bytes; :class:`FormatError` for
    a wrong magic or version, a checksum mismatch or impossible counts."""
    if len(data) < HEADER_SIZE:
        raise FormatError(f"offsets index is {len(data)} bytes, shorter than its header")
    head, (crc,) = data[: _HEAD.size], _CRC.unpack_from(data, _HEAD.size)
    if zlib.crc32(head) != crc:
        raise FormatError("offsets index header checksum does not match (or it is not a version 2 index)")
    magic, ledger_id, count, data_end, payload_bytes, chunk_entries = _HEAD.unpack(head)
    if magic != _MAGIC or count < 0 or chunk_entries <= 0 or data_end < 0 or payload_bytes < 0:
        raise FormatError("offsets index header is not a version 2 header")
    return OffsetsHeader(ledger_id, count, data_end, payload_bytes, chunk_entries)


def chunk_span(header: OffsetsHeader, chunk: int) -> tuple[int, int]:
    """Where chunk ``chunk`` lies in the index file: offset and length."""
    full = header.chunk_entries * _OFFSET_SIZE + _CRC.size
    entries = min(header.chunk_entries, header.entry_count - chunk * header.chunk_entries)
    return HEADER_SIZE + chunk * full, entries * _OFFSET_SIZE + _CRC.size


def index_size(header: OffsetsHeader) -> int:
    """How long the index file ``header`` opens is."""
    if not header.entry_count:
        return HEADER_SIZE
    start, length = chunk_span(header, header.chunks - 1)
    return start + length


def decode_offsets_chunk(header: OffsetsHeader, chunk: int, data: bytes) -> array[int]:
    """The offsets of chunk ``chunk``; :class:`FormatError` unless its
    length and CRC match and its offsets rise inside the data end."""
    _, length = chunk_span(header, chunk)
    if len(data) != length:
        raise FormatError(f"offsets index chunk {chunk} is {len(data)} bytes, expected {length}")
    body, (crc,) = data[: -_CRC.size], _CRC.unpack(data[-_CRC.size :])
    if zlib.crc32(body) != crc:
        raise FormatError(f"offsets index chunk {chunk} checksum does not match")
    offsets = array("q")
    offsets.frombytes(body)
    if sys.byteorder == "little":
        offsets.byteswap()
    # The CRC vouches for every offset; the ends are checked here, and each
    # entry's own header (id, length, CRC) is checked when it is read.
    if offsets and not (0 < offsets[0] <= offsets[-1] < header.data_end):
        raise FormatError(f"offsets index chunk {chunk} has offsets outside the file")
    return offsets


def decode_offsets_index(data: bytes) -> OffsetsIndex:
    """Parse a whole index file; :class:`FormatError` unless it is exactly
    one intact index."""
    header = decode_offsets_header(data)
    offsets = array("q")
    for chunk in range(header.chunks):
        start, length = chunk_span(header, chunk)
        offsets.extend(decode_offsets_chunk(header, chunk, data[start : start + length]))
    end = index_size(header)
    if len(data) != end:
        raise FormatError(f"offsets index is {len(data)} bytes, its header describes {end}")
    return OffsetsIndex(header.ledger_id, offsets, header.data_end, header.payload_bytes)
