"""Kafka record batches (magic v2), their records, and the header type
every magic shares. Pure. (:mod:`.kafka_batches` reads batches of any
magic; the magic 0/1 message sets are in :mod:`.kafka_legacy_records`.)

Batch layout (big-endian), 61-byte header::

    base offset i64 | batch length i32 (bytes after this field) |
    partition leader epoch i32 | magic i8 = 2 | crc u32 |
    attributes i16 | last offset delta i32 | base timestamp i64 |
    max timestamp i64 | producer id i64 | producer epoch i16 |
    base sequence i32 | record count i32 | records

The CRC is CRC-32C over attributes through the end of the batch.
Attributes: bits 0-2 codec, bit 3 LogAppendTime, bit 4 transactional,
bit 5 control, bit 6 delete horizon (the base timestamp then holds it).
Records use zig-zag varints: length, attributes i8, timestamp delta,
offset delta, key length + key, value length + value (-1 = null), header
count, then per header key length + UTF-8 key, value length + value.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import google_crc32c

from ..errors import FormatError
from .kafka_codecs import DEFAULT_DECOMPRESSED_LIMIT, Compression, DecodedBytes, compress, iter_decompressed

__all__ = [
    "BATCH_HEADER_LENGTH",
    "CONTROL_ABORT",
    "CONTROL_COMMIT",
    "LOG_OVERHEAD",
    "BatchHeader",
    "Header",
    "Record",
    "control_record",
    "control_type",
    "decode_v2_header",
    "encode_batch",
    "encode_record",
    "iter_v2_records",
    "v2_batch_crc",
]

BATCH_HEADER_LENGTH = 61
LOG_OVERHEAD = 12  # base offset + batch length: what a batch's length does not count
_HEADER = struct.Struct(">qiibIhiqqqhii")
_CRC_START = 21
NO_SEQUENCE = -1
NO_PRODUCER_ID = -1
NO_TIMESTAMP = -1
_INT32_MAX = 2**31 - 1

_LOG_APPEND_TIME = 0x08
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_DELETE_HORIZON = 0x40


@dataclass(frozen=True)
class Header:
    """A record header; ``value`` is ``None`` when absent (length -1)."""

    key: str
    value: bytes | None


@dataclass(frozen=True)
class Record:
    """One record as a consumer sees it: absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    sequence: int = NO_SEQUENCE
    size_in_bytes: int = 0


@dataclass(frozen=True)
class BatchHeader:
    """The header of a batch at ``position`` in a log: a v2 batch's 61
    bytes, or what a magic 0/1 log entry (one message, or a compressed
    wrapper of several) says in the same terms, as Kafka's ``RecordBatch``
    presents both (no leader epoch, producer or sequence: -1; attributes
    only the codec and, for magic 1, the timestamp type)."""

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & _LOG_APPEND_TIME)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & _DELETE_HORIZON else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return _sequence_after(self.base_sequence, self.last_offset_delta)


def _sequence_after(base: int, delta: int) -> int:
    # Kafka's DefaultRecordBatch.incrementSequence: sequences wrap at i32 max to 0.
    return base + delta if base <= _INT32_MAX - delta else delta - (_INT32_MAX - base) - 1


def decode_v2_header(data: bytes | memoryview, position: int = 0) -> BatchHeader:
    """The header of the v2 batch starting at ``position`` of ``data``.

    Raises :class:`FormatError` if fewer than 61 bytes are there, the magic
    is not 2, or the lengths are impossible."""
    if position < 0 or len(data) - position < BATCH_HEADER_LENGTH:
        raise FormatError(f"record batch at position {position} is truncated inside its 61-byte header")
    fields = _HEADER.unpack_from(data, position)
    header = BatchHeader(position, *fields)
    if header.magic != 2:
        raise FormatError(f"record batch at position {position} has magic {header.magic}, not 2")
    if header.batch_length < BATCH_HEADER_LENGTH - LOG_OVERHEAD:
        raise FormatError(f"record batch at position {position} claims {header.batch_length} bytes, less than a header")
    if header.record_count < 0 or header.last_offset_delta < 0:
        raise FormatError(f"record batch at position {position} has a negative record count or offset delta")
    return header


def v2_batch_crc(batch: bytes | memoryview) -> int:
    """CRC-32C of a whole v2 batch's checksummed part (attributes to the end)."""
    return int(google_crc32c.value(bytes(batch[_CRC_START:])))


def _varint(view: bytes, position: int) -> tuple[int, int]:
    shift = 0
    raw = 0
    while True:
        if position >= len(view):
            raise FormatError("record is truncated inside a varint")
        byte = view[position]
        position += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), position
        shift += 7
        if shift > 63:
            raise FormatError("record varint is longer than 10 bytes")


def _field(data: bytes, position: int, what: str) -> tuple[bytes | None, int]:
    length, position = _varint(data, position)
    if length < 0:
        if length != -1:
            raise FormatError(f"record {what} length {length} is negative")
        return None, position
    end = position + length
    if end > len(data):
        raise FormatError(f"record {what} of {length} bytes runs past its record")
    return data[position:end], end


def iter_v2_records(
    batch: bytes | memoryview, header: BatchHeader, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT
) -> Iterator[Record]:
    """The records of one whole v2 batch as they are decompressed and
    parsed (offsets and timestamps made absolute; LogAppendTime batches give
    each record the batch's max timestamp), so a batch is never held
    decoded whole. Raises :class:`FormatError`, when it is reached, for any
    inconsistency: records running past their length, a count that does not
    match, bad UTF-8 in a header key, output past ``limit`` bytes."""
    payload = memoryview(batch)[BATCH_HEADER_LENGTH : header.size_in_bytes]
    body = DecodedBytes(iter_decompressed(header.compression, payload, limit=limit))
    for _ in range(header.record_count):
        prefix = body.varint()
        if prefix is None:
            raise FormatError(f"batch at offset {header.base_offset} ends before its {header.record_count} records")
        length, width = prefix
        record = body.take(length) if length >= 0 else None
        if record is None:
            raise FormatError(f"record of {length} bytes runs past the batch at offset {header.base_offset}")
        yield _record(record, header, width + length)
    if not body.at_end():
        raise FormatError(
            f"batch at offset {header.base_offset} holds bytes after its {header.record_count} records: "
            "its record count is wrong"
        )


def _record(data: bytes, batch: BatchHeader, size: int) -> Record:
    if not data:
        raise FormatError(f"empty record in the batch at offset {batch.base_offset}")
    timestamp_delta, position = _varint(data, 1)
    offset_delta, position = _varint(data, position)
    key, position = _field(data, position, "key")
    value, position = _field(data, position, "value")
    count, position = _varint(data, position)
    if count < 0:
        raise FormatError(f"record header count {count} is negative")
    headers = []
    for _ in range(count):
        raw_key, position = _field(data, position, "header key")
        if raw_key is None:
            raise FormatError("record header key is null; Kafka requires one")
        header_value, position = _field(data, position, "header value")
        try:
            headers.append(Header(raw_key.decode("utf-8"), header_value))
        except UnicodeDecodeError:
            raise FormatError("record header key is not UTF-8") from None
    if position != len(data):
        raise FormatError(f"record at offset delta {offset_delta} has {len(data) - position} bytes past its headers")
    timestamp = batch.max_timestamp if batch.log_append_time else batch.base_timestamp + timestamp_delta
    sequence = NO_SEQUENCE if batch.base_sequence == NO_SEQUENCE else _sequence_after(batch.base_sequence, offset_delta)
    return Record(batch.base_offset + offset_delta, timestamp, key, value, tuple(headers), sequence, size)


def _put_varint(out: bytearray, value: int) -> None:
    raw = (value << 1) ^ (value >> 63)
    while raw & ~0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def _put_field(out: bytearray, value: bytes | None) -> None:
    if value is None:
        _put_varint(out, -1)
    else:
        _put_varint(out, len(value))
        out += value


def encode_record(record: Record, *, offset_delta: int, timestamp_delta: int) -> bytes:
    """One record's bytes (length prefix included)."""
    body = bytearray(b"\x00")
    _put_varint(body, timestamp_delta)
    _put_varint(body, offset_delta)
    _put_field(body, record.key)
    _put_field(body, record.value)
    _put_varint(body, len(record.headers))
    for header in record.headers:
        _put_field(body, header.key.encode("utf-8"))
        _put_field(body, header.value)
    out = bytearray()
    _put_varint(out, len(body))
    return bytes(out + body)


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int,
    compression: Compression = Compression.NONE,
    log_append_time: int | None = None,
    partition_leader_epoch: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    control: bool = False,
    level: int | None = None,
) -> bytes:
    """A v2 batch holding ``records`` as Kafka's ``MemoryRecordsBuilder``
    writes it: offsets are ``base_offset + i`` unless records carry their own
    (offset deltas relative to ``base_offset``); timestamps relative to the
    first record's; with ``log_append_time`` every record reads back with it.
    Raises :class:`FormatError` for an empty batch or offsets below the base."""
    if not records:
        raise FormatError("a record batch needs at least one record")
    base_timestamp = log_append_time if log_append_time is not None else records[0].timestamp
    body = bytearray()
    last_delta = 0
    for record in records:
        delta = record.offset - base_offset
        if delta < 0 or delta < last_delta:
            raise FormatError(f"record offset {record.offset} is below the batch's base or out of order")
        last_delta = delta
        ts_delta = 0 if log_append_time is not None else record.timestamp - base_timestamp
        body += encode_record(record, offset_delta=delta, timestamp_delta=ts_delta)
    max_timestamp = log_append_time if log_append_time is not None else max(r.timestamp for r in records)
    attributes = int(compression) | (_LOG_APPEND_TIME if log_append_time is not None else 0)
    attributes |= (_TRANSACTIONAL if transactional else 0) | (_CONTROL if control else 0)
    payload = compress(compression, bytes(body), level=level)
    tail = struct.pack(">hiqqqhii", attributes, last_delta, base_timestamp, max_timestamp, producer_id,
                       producer_epoch, base_sequence, len(records)) + payload  # fmt: skip
    crc = int(google_crc32c.value(tail))
    head = struct.pack(">qiibI", base_offset, BATCH_HEADER_LENGTH - LOG_OVERHEAD + len(payload), partition_leader_epoch,
                       2, crc)  # fmt: skip
    return head + tail


CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")


def control_record(kind: int, *, offset: int, timestamp: int, coordinator_epoch: int = 0) -> Record:
    """An end-transaction marker (``CONTROL_ABORT`` or ``CONTROL_COMMIT``),
    for a batch encoded with ``control=True``."""
    return Record(offset, timestamp, _CONTROL_KEY.pack(0, kind), _CONTROL_VALUE.pack(0, coordinator_epoch))


def control_type(record: Record) -> int:
    """The marker type (0 ABORT, 1 COMMIT) of a control batch's record;
    :class:`FormatError` if its key is not a control key."""
    if record.key is None or len(record.key) < _CONTROL_KEY.size:
        raise FormatError(f"control record at offset {record.offset} has no 4-byte control key")
    version, kind = _CONTROL_KEY.unpack_from(record.key)
    if version < 0:
        raise FormatError(f"control record at offset {record.offset} has key version {version}")
    return int(kind)
