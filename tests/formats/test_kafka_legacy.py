"""Magic 0 and 1 message sets (Kafka before 0.11, and old clients): read
as Kafka's AbstractLegacyRecordBatch reads them, from message sets built
by kafka-python's legacy builder, an implementation independent of ours."""

from __future__ import annotations

import contextlib
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatch

from offload_core.errors import FormatError
from offload_core.formats import kafka
from offload_core.testing.strategies import kafka_records
from tests.legacy_message_sets import entries, message_set, old_lz4_wrapper, wrap

C = kafka.Compression
LEGACY_CODECS = [C.NONE, C.GZIP, C.SNAPPY, C.LZ4]
T0 = 1_600_000_000_000
APPENDED = 1_650_000_000_000


def sample(base: int = 100) -> list[kafka.Record]:
    return [kafka.Record(base, T0 + 5, b"k0", b"v0"), kafka.Record(base + 1, T0 + 9, None, b"v1"),
            kafka.Record(base + 2, T0 + 1, b"k2", None), kafka.Record(base + 3, T0 + 7, b"", b"")]  # fmt: skip


def read_all(log: bytes) -> tuple[list[kafka.BatchHeader], list[kafka.Record]]:
    headers = list(kafka.iter_batches(log))
    records = [r for h in headers for r in kafka.decode_records(log[h.position : h.position + h.size_in_bytes], h)]
    return headers, records


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name.lower())
@pytest.mark.parametrize("magic", [0, 1])
def test_message_sets_read_as_kafka_reads_them(magic: int, codec: C) -> None:
    records = sample()
    log = message_set(magic, codec, records)
    headers, got = read_all(log)
    assert [(r.offset, r.key, r.value, r.headers, r.sequence) for r in got] == [
        (r.offset, r.key, r.value, (), -1) for r in records
    ]
    assert [r.timestamp for r in got] == [(-1 if magic == 0 else r.timestamp) for r in records]
    assert all(h.magic == magic and h.compression == codec and h.partition_leader_epoch == -1 for h in headers)
    assert all(h.producer_id == -1 and not h.is_transactional and not h.is_control for h in headers)
    if codec == C.NONE:
        assert [(h.base_offset, h.last_offset, h.record_count) for h in headers] == [(r.offset, r.offset, 1)
                                                                                     for r in records]  # fmt: skip
    else:
        (wrapper,) = headers
        assert (wrapper.base_offset, wrapper.last_offset, wrapper.record_count) == (100, 103, 4)
        assert wrapper.size_in_bytes == len(log)
        assert wrapper.max_timestamp == (-1 if magic == 0 else T0 + 9)
        assert wrapper.base_timestamp == (-1 if magic == 0 else T0 + 5)
    assert all(h.crc == kafka.batch_crc(log[h.position : h.position + h.size_in_bytes]) for h in headers)
    assert all(h.crc == zlib.crc32(log[h.position + 16 : h.position + h.size_in_bytes]) for h in headers)


@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: c.name.lower())
def test_log_append_time_gives_every_record_the_wrappers_timestamp(codec: C) -> None:
    log = message_set(1, codec, sample(), log_append_time=APPENDED)
    headers, got = read_all(log)
    assert all(h.log_append_time and h.max_timestamp == APPENDED for h in headers)
    assert [r.timestamp for r in got] == [APPENDED] * 4


def test_compacted_magic_1_wrapper_keeps_its_offset_gaps() -> None:
    records = [kafka.Record(o, T0 + o, b"k", b"v") for o in (10, 11, 15, 20)]
    headers, got = read_all(message_set(1, C.GZIP, records))
    assert [r.offset for r in got] == [10, 11, 15, 20]
    assert (headers[0].base_offset, headers[0].last_offset) == (10, 20)


def test_a_librdkafka_wrapper_offset_of_zero_means_base_zero() -> None:
    (wrapper,) = entries(message_set(1, C.GZIP, sample(base=0)))
    assert struct.unpack_from(">q", wrapper)[0] == 3
    struct.pack_into(">q", wrapper, 0, 0)  # the offset is outside the CRC
    _, got = read_all(bytes(wrapper))
    assert [r.offset for r in got] == [0, 1, 2, 3]


def test_magic_0_lz4_ignores_the_wrong_header_checksum_old_clients_wrote() -> None:
    records = sample()
    _, got = read_all(message_set(0, C.LZ4, records))
    assert [(r.offset, r.key, r.value) for r in got] == [(r.offset, r.key, r.value) for r in records]
    # Kafka tolerates it for magic 0 only: the same frame in a magic 1 wrapper is damaged.
    wrapper = old_lz4_wrapper(records, magic=1)
    struct.pack_into(">I", wrapper, 12, zlib.crc32(wrapper[16:]))
    with pytest.raises(FormatError, match="lz4 record data is damaged"):
        read_all(bytes(wrapper))


def test_damage_is_a_format_error() -> None:
    (wrapper,) = entries(message_set(1, C.NONE, sample()[:1]))
    with pytest.raises(FormatError, match="CRC-32"):
        read_all(bytes(wrapper[:-1]) + b"X")
    zstd = message_set(1, C.GZIP, sample())
    forged = bytearray(zstd)
    forged[17] = (forged[17] & ~0x07) | C.ZSTD
    struct.pack_into(">I", forged, 12, zlib.crc32(forged[16:]))
    with pytest.raises(FormatError, match="codecs 0-3"):
        read_all(bytes(forged))
    with pytest.raises(FormatError, match="magic 7"):
        read_all(bytes(forged[:16]) + b"\x07" + bytes(forged[17:]))
    # A wrapper around a wrapper: Kafka nests one level only.
    nested = wrap(1, C.GZIP, kafka.compress(C.GZIP, message_set(1, C.GZIP, sample())), 103)
    with pytest.raises(FormatError, match="compressed again"):
        read_all(nested)
    with pytest.raises(FormatError, match="without inner messages"):
        read_all(wrap(1, C.GZIP, kafka.compress(C.GZIP, b""), 0))
    # The last inner offset must not pass the wrapper's (magic 1).
    with pytest.raises(FormatError, match="past its own"):
        read_all(wrap(1, C.GZIP, kafka.compress(C.GZIP, message_set(1, C.NONE, sample(base=0))), 2))


@given(kafka_records(base_offset=50), st.sampled_from([0, 1]), st.sampled_from(LEGACY_CODECS))
def test_kafka_python_message_sets_read_by_us_and_by_it(records: list[kafka.Record], magic: int, codec: C) -> None:
    log = message_set(magic, codec, records)
    headers, got = read_all(log)
    assert [(r.offset, r.key, r.value) for r in got] == [(r.offset, r.key, r.value) for r in records]
    assert [r.timestamp for r in got] == [-1 if magic == 0 else r.timestamp for r in records]
    assert headers[0].base_offset == records[0].offset and headers[-1].last_offset == records[-1].offset
    if codec != C.LZ4 or magic == 1:  # kafka-python reads old lz4 only with xxhash installed
        theirs = [r for e in entries(log) for r in LegacyRecordBatch(e, magic)]
        # kafka-python says None where Kafka (and we) say -1: no timestamp.
        assert [(r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value) for r in theirs] == [
            (r.offset, r.timestamp, r.key, r.value) for r in got
        ]


@given(st.sampled_from([0, 1]), st.sampled_from(LEGACY_CODECS), st.data())
def test_truncated_or_bit_flipped_message_sets_raise_only_format_errors(magic: int, codec: C, data) -> None:
    log = message_set(magic, codec, sample())
    cut = data.draw(st.integers(0, len(log)))
    with contextlib.suppress(FormatError):
        read_all(log[:cut])
    position = data.draw(st.integers(0, len(log) - 1))
    flipped = bytearray(log)
    flipped[position] ^= 1 << data.draw(st.integers(0, 7))
    start = max(h.position for h in kafka.iter_batches(log) if h.position <= position)
    if position - start < 12:  # offset and size are outside the CRC
        with contextlib.suppress(FormatError):
            read_all(bytes(flipped))
    else:
        with pytest.raises(FormatError):
            read_all(bytes(flipped))
