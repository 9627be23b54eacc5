"""Record batches of every magic Kafka writes, behind one interface: v2
batches (:mod:`.kafka_records`) and the magic 0/1 message sets before them
(:mod:`.kafka_legacy_records`), as Kafka's ``RecordBatch`` presents both.
Pure.

Every batch starts ``i64 offset | i32 length`` (of what follows), and its
magic is the byte at 16. A v2 header is its first 61 bytes; a magic 0/1
entry is read whole (its header is only known once a compressed wrapper's
inner messages are walked), so a reader first takes
:data:`BATCH_PREFIX_LENGTH` bytes and asks :func:`header_span` how many
the header needs.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from ..errors import FormatError
from .kafka_codecs import DEFAULT_DECOMPRESSED_LIMIT
from .kafka_legacy_records import LEGACY_MIN_SIZE, decode_legacy_header, iter_legacy_records, legacy_crc
from .kafka_records import (
    BATCH_HEADER_LENGTH,
    LOG_OVERHEAD,
    BatchHeader,
    Record,
    decode_v2_header,
    iter_v2_records,
    v2_batch_crc,
)

__all__ = [
    "BATCH_PREFIX_LENGTH",
    "batch_crc",
    "batch_magic",
    "crc_name",
    "decode_batch_header",
    "decode_records",
    "header_span",
    "iter_batches",
    "iter_records",
]

#: Base offset, length, and the four bytes before the magic, then the magic.
BATCH_PREFIX_LENGTH = 17
_LENGTH = struct.Struct(">i")


def batch_magic(data: bytes | memoryview, position: int = 0) -> int:
    """The magic of the batch at ``position``, whose first
    :data:`BATCH_PREFIX_LENGTH` bytes ``data`` holds. Raises
    :class:`FormatError` for fewer bytes or a magic Kafka never wrote."""
    if position < 0 or len(data) - position < BATCH_PREFIX_LENGTH:
        raise FormatError(f"record batch at position {position} is truncated before its magic")
    magic = int(data[position + BATCH_PREFIX_LENGTH - 1])
    if magic not in (0, 1, 2):
        raise FormatError(f"record batch at position {position} has magic {magic}; Kafka writes 0, 1 and 2 only")
    return magic


def header_span(data: bytes | memoryview, position: int = 0) -> int:
    """How many bytes from ``position`` (a batch's start) :func:`decode_batch_header`
    needs: 61 for a v2 batch, the whole entry for magic 0/1. ``data`` must
    hold :data:`BATCH_PREFIX_LENGTH` bytes from there. Raises
    :class:`FormatError` as :func:`batch_magic` does, and for a magic 0/1
    entry shorter than a message."""
    if batch_magic(data, position) == 2:
        return BATCH_HEADER_LENGTH
    (length,) = _LENGTH.unpack_from(data, position + 8)
    if length < LEGACY_MIN_SIZE:
        raise FormatError(f"message at position {position} claims {length} bytes, fewer than any message")
    return LOG_OVERHEAD + int(length)


def decode_batch_header(
    data: bytes | memoryview, position: int = 0, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT
) -> BatchHeader:
    """The header of the batch at ``position`` of ``data``, of any magic
    (``data`` holds :func:`header_span` bytes from there: a magic 0/1 entry
    whole, its CRC-32 then checked, and a compressed one's inner messages
    walked, decompressing at most ``limit`` bytes). Raises
    :class:`FormatError` for a cut, impossible or (magic 0/1) damaged one."""
    if batch_magic(data, position) == 2:
        return decode_v2_header(data, position)
    return decode_legacy_header(data, position, limit=limit)


def batch_crc(batch: bytes | memoryview) -> int:
    """The checksum a whole batch's ``crc`` field must equal: CRC-32C from
    the attributes on (v2), CRC-32 from the magic on (magic 0/1)."""
    if batch_magic(batch) == 2:
        return v2_batch_crc(batch)
    return legacy_crc(batch)


def crc_name(magic: int) -> str:
    """The checksum a batch of ``magic`` carries, for messages."""
    return "CRC-32C" if magic == 2 else "CRC-32"


def iter_batches(
    log: bytes | memoryview, start: int = 0, *, verify: bool = True, limit: int = DEFAULT_DECOMPRESSED_LIMIT
) -> Iterator[BatchHeader]:
    """Every batch header of ``log`` from byte ``start``, in order.

    Raises :class:`FormatError` for a batch that runs past the end, or (with
    ``verify``) whose CRC does not match: a log is read whole, never in part."""
    position = start
    view = memoryview(log)
    while position < len(view):
        header = decode_batch_header(view, position, limit=limit)
        end = position + header.size_in_bytes
        if end > len(view):
            raise FormatError(f"record batch at position {position} runs past the end of the log ({len(view)} bytes)")
        if verify and batch_crc(view[position:end]) != header.crc:
            raise FormatError(
                f"record batch at position {position} (offsets {header.base_offset}..{header.last_offset}) "
                f"fails its {crc_name(header.magic)}: the segment is damaged"
            )
        yield header
        position = end


def iter_records(
    batch: bytes | memoryview, header: BatchHeader | None = None, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT
) -> Iterator[Record]:
    """The records of one whole batch of any magic, yielded as they are
    decompressed and parsed, as a consumer sees them (absolute offsets and
    timestamps; no headers before v2). Raises :class:`FormatError`, when it
    is reached, for any inconsistency or output past ``limit`` bytes."""
    header = header or decode_batch_header(batch, limit=limit)
    if header.magic == 2:
        return iter_v2_records(batch, header, limit=limit)
    return iter_legacy_records(batch, header, limit=limit)


def decode_records(
    batch: bytes | memoryview, header: BatchHeader | None = None, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT
) -> list[Record]:
    """Every record of one whole batch, as :func:`iter_records` gives them."""
    return list(iter_records(batch, header, limit=limit))
