"""The offsets index of a sealed hot-tier ledger file. Pure.

A sealed ledger never changes, so where each entry starts is written once,
beside it (``{ledger file}.idx``), and reopening it costs one small read
instead of a scan of every record (which re-reads and re-checksums every
payload). Layout, big-endian::

    b"OLIDX001" | int64 ledger id | int64 entry count | int64 data end
    | int64 payload bytes | entry count x int64 record offset | uint32 crc32

The CRC-32 covers everything before it. The index is trusted only when it
decodes, its CRC matches, it names the same ledger, and its data end is the
file's size; otherwise the ledger file is scanned and the index rewritten.
Each entry's own CRC is still checked when the entry is read.
"""

from __future__ import annotations

import struct
import sys
import zlib
from array import array
from dataclasses import dataclass

from ..errors import FormatError

__all__ = ["OffsetsIndex", "decode_offsets_index", "encode_offsets_index"]

_MAGIC = b"OLIDX001"
_HEAD = struct.Struct(">8sqqqq")
_CRC = struct.Struct(">I")


@dataclass(frozen=True)
class OffsetsIndex:
    """Where each record of a sealed ledger file starts, and its totals."""

    ledger_id: int
    offsets: array[int]
    data_end: int
    payload_bytes: int


def encode_offsets_index(index: OffsetsIndex) -> bytes:
    """The index file's bytes."""
    big_endian = array("q", index.offsets)
    if sys.byteorder == "little":
        big_endian.byteswap()
    body = _HEAD.pack(_MAGIC, index.ledger_id, len(index.offsets), index.data_end, index.payload_bytes)
    body += big_endian.tobytes()
    return body + _CRC.pack(zlib.crc32(body))


def decode_offsets_index(data: bytes) -> OffsetsIndex:
    """Parse an index file; :class:`FormatError` unless it is exactly one
    intact index with offsets rising inside its data end."""
    if len(data) < _HEAD.size + _CRC.size:
        raise FormatError(f"offsets index is {len(data)} bytes, shorter than its header")
    body, (crc,) = data[: -_CRC.size], _CRC.unpack(data[-_CRC.size :])
    if zlib.crc32(body) != crc:
        raise FormatError("offsets index checksum does not match")
    magic, ledger_id, count, data_end, payload_bytes = _HEAD.unpack_from(body)
    if magic != _MAGIC or count < 0 or len(body) != _HEAD.size + 8 * count:
        raise FormatError("offsets index header does not match its length")
    offsets = array("q")
    offsets.frombytes(body[_HEAD.size :])
    if sys.byteorder == "little":
        offsets.byteswap()
    # The CRC vouches for every offset; the ends are checked here, and each
    # entry's own header (id, length, CRC) is checked when it is read, so no
    # per-offset loop runs at open.
    if count and not (0 < offsets[0] <= offsets[-1] < data_end):
        raise FormatError("offsets index offsets do not lie inside the file")
    return OffsetsIndex(ledger_id=ledger_id, offsets=offsets, data_end=data_end, payload_bytes=payload_bytes)
