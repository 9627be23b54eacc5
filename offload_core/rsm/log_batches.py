"""Whole batches read off a stream of a remote ``.log``, one at a time,
each CRC-checked: what every remote reader (the log reader, index checks,
Spark tasks) walks."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import replace
from typing import IO

from ..errors import FormatError
from ..formats import kafka

__all__ = ["read_batches"]

_LENGTH = struct.Struct(">i")


def read_batches(
    stream: IO[bytes], position: int, size: int, *, limit: int = kafka.DEFAULT_DECOMPRESSED_LIMIT
) -> Iterator[tuple[kafka.BatchHeader, bytes]]:
    """Whole, CRC-checked batches of any magic from ``stream`` (at byte
    ``position`` of its log, a batch start) up to byte ``size``, one at a
    time; a :class:`FormatError` for a damaged or cut batch, or a magic 0/1
    compressed wrapper whose header (its inner messages) decompresses past
    ``limit`` bytes."""
    while position < size:
        head = _read_exactly(stream, kafka.LOG_OVERHEAD)
        if len(head) < kafka.LOG_OVERHEAD:
            raise FormatError(f"remote log ends inside the batch at byte {position}: the segment is damaged")
        (length,) = _LENGTH.unpack_from(head, 8)
        if length < 0 or position + kafka.LOG_OVERHEAD + length > size:
            raise FormatError(f"remote batch at byte {position} claims {length} bytes, past the end of its log "
                              f"({size} bytes): the segment is damaged")  # fmt: skip
        data = head + _read_exactly(stream, length)
        if len(data) != kafka.LOG_OVERHEAD + length:
            raise FormatError(f"remote log ends inside the batch at byte {position}: the segment is damaged")
        header = kafka.decode_batch_header(data, limit=limit)
        if kafka.batch_crc(data) != header.crc:
            raise FormatError(f"remote batch at byte {position} (offset {header.base_offset}) fails its "
                              f"{kafka.crc_name(header.magic)}")  # fmt: skip
        yield replace(header, position=position), data
        position += header.size_in_bytes


def _read_exactly(stream: IO[bytes], count: int) -> bytes:
    """``count`` bytes, fewer only at the end of the stream (a raw stream
    may return less than asked per call)."""
    first = stream.read(count)
    if len(first) == count or not first:
        return first
    pieces = [first]
    missing = count - len(first)
    while missing:
        piece = stream.read(missing)
        if not piece:
            break
        pieces.append(piece)
        missing -= len(piece)
    return b"".join(pieces)
