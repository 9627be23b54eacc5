"""Kafka's message sets before v2: magic 0 (Kafka 0.8-0.9) and magic 1
(0.10, KIP-32 timestamps), as topics older than 0.11, or fed by old
clients, still hold them. Read only; pure. Kafka's
``AbstractLegacyRecordBatch`` and ``LegacyRecord`` are the authority.

A log entry is ``i64 offset | i32 size``, then one message::

    crc u32 | magic i8 | attributes i8 | [timestamp i64: magic 1 only] |
    key length i32 + key | value length i32 + value   (negative = null)

The CRC is CRC-32 (not C) from the magic to the end of the message.
Attributes: bits 0-2 codec (none, gzip, snappy, lz4: no zstd before v2),
bit 3 LogAppendTime (magic 1). A compressed entry is a *wrapper* (null
key) whose value holds, compressed, a message set of uncompressed inner
messages. The wrapper's offset is that of its last inner message; inner
offsets are absolute (magic 0) or relative (magic 1, KIP-31: absolute =
wrapper offset - last inner offset + inner offset, except that a wrapper
offset of 0, as some librdkafka versions send, means base 0). A magic 1
inner message takes the wrapper's timestamp when the wrapper is
LogAppendTime; magic 0 messages have none (-1). Messages have no headers.

A wrapper's first offset and count are only known from its inner
messages, so its header (:func:`decode_legacy_header`) walks them,
decompressing and keeping no value, as Kafka's ``baseOffset()`` does.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import FormatError
from .kafka_codecs import DEFAULT_DECOMPRESSED_LIMIT, Compression, DecodedBytes, iter_decompressed
from .kafka_records import LOG_OVERHEAD, BatchHeader, Record

__all__ = ["LEGACY_MIN_SIZE", "decode_legacy_header", "iter_legacy_records", "legacy_crc"]

#: The smallest message (magic 0, null key and value): Kafka's RECORD_OVERHEAD_V0.
LEGACY_MIN_SIZE = 14
_OVERHEAD = {0: 14, 1: 22}
_ENTRY = struct.Struct(">qi")
_MESSAGE = struct.Struct(">IBB")
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
_CRC_FROM = 4  # in a message: the CRC covers the magic to the end
_ENTRY_CRC_FROM = LOG_OVERHEAD + _CRC_FROM
_CODEC = 0x07
_LOG_APPEND_TIME = 0x08
_NO_TIMESTAMP = -1
_NONE = -1  # no leader epoch, producer or sequence before v2


@dataclass(frozen=True)
class _Message:
    size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int
    key: memoryview | None
    value: memoryview | None

    @property
    def codec(self) -> int:
        return self.attributes & _CODEC

    @property
    def log_append_time(self) -> bool:
        return self.magic == 1 and bool(self.attributes & _LOG_APPEND_TIME)


def legacy_crc(entry: bytes | memoryview) -> int:
    """CRC-32 of a whole log entry's message from its magic on."""
    return zlib.crc32(memoryview(entry)[_ENTRY_CRC_FROM:])


def _message(data: memoryview, where: str) -> _Message:
    if len(data) < LEGACY_MIN_SIZE:
        raise FormatError(f"{where} is {len(data)} bytes, shorter than any message")
    crc, magic, attributes = _MESSAGE.unpack_from(data)
    if magic not in _OVERHEAD:
        raise FormatError(f"{where} has magic {magic}, not 0 or 1")
    if len(data) < _OVERHEAD[magic]:
        raise FormatError(f"{where} is {len(data)} bytes, shorter than a magic {magic} message")
    if zlib.crc32(data[_CRC_FROM:]) != crc:
        raise FormatError(f"{where} fails its CRC-32: the segment is damaged")
    timestamp = _NO_TIMESTAMP
    position = _MESSAGE.size
    if magic == 1:
        (timestamp,) = _TIMESTAMP.unpack_from(data, position)
        position += _TIMESTAMP.size
    key, position = _sized(data, position, where, "key")
    value, position = _sized(data, position, where, "value")
    if position != len(data):
        raise FormatError(f"{where} holds {len(data) - position} bytes after its value")
    return _Message(len(data), crc, magic, attributes, timestamp, key, value)


def _sized(data: memoryview, position: int, where: str, what: str) -> tuple[memoryview | None, int]:
    if position + _LENGTH.size > len(data):
        raise FormatError(f"{where} ends inside its {what} length")
    (length,) = _LENGTH.unpack_from(data, position)
    position += _LENGTH.size
    if length < 0:
        return None, position  # LegacyRecord: any negative size is null
    end = position + length
    if end > len(data):
        raise FormatError(f"{where} has a {what} of {length} bytes running past the message")
    return data[position:end], end


def _entry(data: memoryview, position: int) -> tuple[int, _Message, str]:
    if position < 0 or len(data) - position < LOG_OVERHEAD:
        raise FormatError(f"message at position {position} is truncated inside its offset and size")
    offset, size = _ENTRY.unpack_from(data, position)
    where = f"message at position {position} (offset {offset})"
    if size < LEGACY_MIN_SIZE:
        raise FormatError(f"{where} claims {size} bytes, fewer than any message")
    end = position + LOG_OVERHEAD + size
    if end > len(data):
        raise FormatError(f"{where} runs past the end of the log ({len(data)} bytes)")
    return offset, _message(data[position + LOG_OVERHEAD : end], where), where


def _inner_messages(wrapper: _Message, where: str, limit: int) -> Iterator[tuple[int, _Message]]:
    if wrapper.codec == Compression.ZSTD or wrapper.codec > Compression.ZSTD:
        raise FormatError(f"{where} names codec {wrapper.codec}: magic {wrapper.magic} has only codecs 0-3")
    if wrapper.value is None:
        raise FormatError(f"{where} is a compressed wrapper with a null value")
    body = DecodedBytes(iter_decompressed(wrapper.codec, wrapper.value, limit=limit, magic=wrapper.magic))
    count = 0
    while not body.at_end():
        head = body.take(LOG_OVERHEAD)
        if head is None:
            raise FormatError(f"{where}: its inner messages end inside an offset and size")
        offset, size = _ENTRY.unpack(head)
        data = body.take(size) if size >= LEGACY_MIN_SIZE else None
        if data is None:
            raise FormatError(f"{where}: inner message {count} of {size} bytes is cut short or too small")
        inner = _message(memoryview(data), f"inner message {count} of the {where}")
        if inner.codec != Compression.NONE:
            raise FormatError(f"{where}: inner message {count} is compressed again; Kafka nests one level only")
        count += 1
        yield offset, inner
    if count == 0:
        raise FormatError(f"{where} is a compressed wrapper without inner messages")


def _timestamp(message: _Message, wrapper: _Message | None) -> int:
    if message.magic == 0:
        return _NO_TIMESTAMP
    if wrapper is not None and wrapper.log_append_time:
        return wrapper.timestamp
    return message.timestamp


def decode_legacy_header(
    data: bytes | memoryview, position: int = 0, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT
) -> BatchHeader:
    """The header of the magic 0/1 log entry at ``position`` of ``data``,
    which must hold all of it; its CRC-32 is checked. Raises
    :class:`FormatError` for a cut, damaged or inconsistent entry (a
    wrapper whose inner offsets pass its own, inner messages compressed
    again or past ``limit`` bytes)."""
    offset, message, where = _entry(memoryview(data), position)
    base, count, first_timestamp = offset, 1, _timestamp(message, None)
    if message.codec != Compression.NONE:
        inner = _inner_messages(message, where, limit)
        first_offset, first = next(inner)  # a wrapper without inner messages raises here
        last, count = first_offset, 1
        for inner_offset, _ in inner:
            last, count = inner_offset, count + 1
        base = _absolute(message, offset, last, first_offset)
        first_timestamp = _timestamp(first, message)
    if base > offset:
        raise FormatError(f"{where}: its first inner offset {base} is past the wrapper's offset")
    attributes = message.codec | (message.attributes & _LOG_APPEND_TIME if message.magic == 1 else 0)
    return BatchHeader(position, base, message.size, _NONE, message.magic, message.crc, attributes, offset - base,
                       first_timestamp, message.timestamp, _NONE, _NONE, _NONE, count)  # fmt: skip


def _absolute(wrapper: _Message, wrapper_offset: int, last_inner: int, inner: int) -> int:
    if wrapper.magic == 0:
        return inner
    if wrapper_offset == 0:
        return inner  # some librdkafka versions leave the wrapper offset 0: base 0
    if wrapper_offset < last_inner:
        raise FormatError(
            f"magic 1 wrapper at offset {wrapper_offset} has a last inner offset {last_inner} past its own"
        )
    return wrapper_offset - last_inner + inner


def iter_legacy_records(
    entry: bytes | memoryview, header: BatchHeader, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT
) -> Iterator[Record]:
    """The records of one whole magic 0/1 log entry (``header`` is its
    :func:`decode_legacy_header`), decompressed as they are read: absolute
    offsets, Kafka's timestamps (-1 for magic 0), no headers or sequence.
    Raises :class:`FormatError` as :func:`decode_legacy_header` does."""
    offset, message, where = _entry(memoryview(entry), 0)
    if message.codec == Compression.NONE:
        yield _record(offset, message, None)
        return
    shift: int | None = None
    for inner_offset, inner in _inner_messages(message, where, limit):
        if message.magic == 0:
            yield _record(inner_offset, inner, message)
            continue
        if shift is None:
            shift = header.base_offset - inner_offset  # relative offsets: the header knows the base
        yield _record(shift + inner_offset, inner, message)


def _record(offset: int, message: _Message, wrapper: _Message | None) -> Record:
    key = None if message.key is None else bytes(message.key)
    value = None if message.value is None else bytes(message.value)
    return Record(offset, _timestamp(message, wrapper), key, value, size_in_bytes=message.size + LOG_OVERHEAD)
