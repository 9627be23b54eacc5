"""Magic 0 and 1 message sets as a broker's log holds them, built with
kafka-python's LegacyRecordBatchBuilder (an implementation independent of
ours), then given what the broker's LogValidator sets on a compressed
wrapper: its offset (the last inner message's), and for magic 1 its
timestamp (the max, or the LogAppendTime) and timestamp-type bit."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

import lz4.frame
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from offload_core.formats import kafka

_TIMESTAMP_TYPE = 0x08
_MAGIC_AT, _ATTRIBUTES_AT, _TIMESTAMP_AT = 16, 17, 18


def _builder(magic: int, codec: int, records: Sequence[kafka.Record], offsets: Sequence[int]) -> bytearray:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=2**30)
    for record, offset in zip(records, offsets, strict=True):
        builder.append(offset, timestamp=record.timestamp, key=record.key, value=record.value)
    return builder.build()


def _stamp(entry: bytearray, offset: int, *, timestamp: int | None = None, log_append_time: bool = False) -> bytes:
    """Set an entry's offset (outside the CRC) and, for magic 1, its
    timestamp and timestamp type, then its CRC-32 as a broker would."""
    struct.pack_into(">q", entry, 0, offset)
    if entry[_MAGIC_AT] == 1:
        if timestamp is not None:
            struct.pack_into(">q", entry, _TIMESTAMP_AT, timestamp)
        if log_append_time:
            entry[_ATTRIBUTES_AT] |= _TIMESTAMP_TYPE
    struct.pack_into(">I", entry, 12, zlib.crc32(entry[_MAGIC_AT:]))
    return bytes(entry)


def entries(data: bytes) -> list[bytearray]:
    """The log entries of a message set, each ``offset, size, message``."""
    out = []
    position = 0
    while position < len(data):
        (size,) = struct.unpack_from(">i", data, position + 8)
        out.append(bytearray(data[position : position + 12 + size]))
        position += 12 + size
    return out


def message_set(
    magic: int, codec: int, records: Sequence[kafka.Record], *, log_append_time: int | None = None
) -> bytes:
    """``records`` (absolute offsets) as a broker leaves them: one entry per
    record uncompressed, else one wrapper whose inner offsets are absolute
    (magic 0) or relative to the first record's (magic 1)."""
    if codec == kafka.Compression.NONE:
        plain = entries(bytes(_builder(magic, codec, records, [r.offset for r in records])))
        if log_append_time is None:
            return b"".join(bytes(e) for e in plain)
        return b"".join(_stamp(e, r.offset, timestamp=log_append_time, log_append_time=True)
                        for e, r in zip(plain, records, strict=True))  # fmt: skip
    # Magic 1 inner offsets are relative to the first (a compacted wrapper keeps its gaps).
    inner = [r.offset - (records[0].offset if magic == 1 else 0) for r in records]
    if codec == kafka.Compression.LZ4 and magic == 0:
        wrapper = old_lz4_wrapper(records)
    else:
        wrapper = _builder(magic, codec, records, inner)
    timestamp = log_append_time if log_append_time is not None else max(r.timestamp for r in records)
    return _stamp(wrapper, records[-1].offset, timestamp=timestamp, log_append_time=log_append_time is not None)


def wrap(magic: int, codec: int, value: bytes, offset: int) -> bytes:
    """A wrapper entry around ``value`` (already compressed as ``codec``), whatever it holds."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=2**30)
    builder.append(0, timestamp=0, key=None, value=value)
    wrapper = builder.build()
    wrapper[_ATTRIBUTES_AT] = codec
    return _stamp(wrapper, offset)


def old_lz4_wrapper(records: Sequence[kafka.Record], *, magic: int = 0) -> bytearray:
    """A magic 0 LZ4 wrapper as Kafka 0.8/0.9 clients wrote it: an LZ4 frame
    whose header checksum is wrong (kafka-python would need xxhash to
    reproduce the exact wrong byte; any wrong byte is what is tested)."""
    inner = bytes(_builder(magic, kafka.Compression.NONE, records, [r.offset for r in records]))
    frame = bytearray(lz4.frame.compress(inner, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                         store_size=False, content_checksum=False))  # fmt: skip
    frame[6] ^= 0xFF
    return bytearray(wrap(magic, kafka.Compression.LZ4, bytes(frame), 0))


def upgraded_topic() -> tuple[list[list[bytes]], list[tuple[int, int, bytes | None, bytes | None, int]]]:
    """A topic as it stands after years of upgrades, one list of log
    entries per segment: magic 0 (plain, gzip, LZ4 with the old header
    checksum), then magic 1 (snappy CreateTime, plain, LZ4 LogAppendTime),
    then v2; and every record as a consumer sees it: ``(offset, timestamp,
    key, value, Spark's timestampType)``."""
    t0, appended = 1_500_000_000_000, 1_500_000_099_000

    def records(first: int, count: int) -> list[kafka.Record]:
        # Some null keys and values on the way.
        return [
            kafka.Record(o, t0 + 10 * o, None if o % 4 == 0 else b"key-%d" % o, None if o % 5 == 3 else b"value-%d" % o)
            for o in range(first, first + count)
        ]

    def plain(first: int, count: int) -> bytes:
        return kafka.encode_batch(records(first, count), base_offset=first)

    parts = [
        (0, kafka.Compression.NONE, records(0, 5), None),
        (0, kafka.Compression.GZIP, records(5, 5), None),
        (0, kafka.Compression.LZ4, records(10, 5), None),
        (1, kafka.Compression.SNAPPY, records(15, 5), None),
        (1, kafka.Compression.NONE, records(20, 3), None),
        (1, kafka.Compression.LZ4, records(23, 5), appended),
    ]
    segments: list[list[bytes]] = [[], [], [plain(28, 5)]]
    expected = []
    for magic, codec, batch, log_append_time in parts:
        data = message_set(magic, codec, batch, log_append_time=log_append_time)
        segments[magic] += [bytes(e) for e in entries(data)]
        for r in batch:
            stamp = -1 if magic == 0 else log_append_time or r.timestamp
            kind = -1 if magic == 0 else 1 if log_append_time else 0
            expected.append((r.offset, stamp, r.key, r.value, kind))
    expected += [(r.offset, r.timestamp, r.key, r.value, 0) for r in records(28, 5)]
    return segments, expected
