"""Kafka format properties: round trips through every codec, robustness
(only FormatError), and a cross-check with kafka-python's record builder
and reader, an implementation independent of ours."""

from __future__ import annotations

import contextlib
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from offload_core.errors import FormatError
from offload_core.formats import kafka
from offload_core.testing.strategies import kafka_records
from tests.kafka_vectors import kafka_cases

codecs = st.sampled_from(list(kafka.Compression))
# kafka-python names codecs by the same ids Kafka puts in the attributes.
KAFKA_PYTHON_CODECS = {kafka.Compression.NONE: 0, kafka.Compression.GZIP: 1, kafka.Compression.SNAPPY: 2,
                       kafka.Compression.LZ4: 3, kafka.Compression.ZSTD: 4}  # fmt: skip


def only_format_errors(decode: Callable[[bytes], Any], data: bytes) -> None:
    with contextlib.suppress(FormatError):
        decode(data)


def decode_whole(data: bytes) -> list[kafka.Record]:
    out = []
    for batch in kafka.iter_batches(data):
        out += kafka.decode_records(data[batch.position : batch.position + batch.size_in_bytes], batch)
    return out


@given(kafka_records(base_offset=1000), codecs, st.booleans(), st.integers(-1, 2**31 - 1))
def test_batch_round_trip(records: list[kafka.Record], codec: kafka.Compression, append_time: bool, epoch: int) -> None:
    log_append_time = 1_700_000_000_000 if append_time else None
    data = kafka.encode_batch(records, base_offset=1000, compression=codec, log_append_time=log_append_time,
                              partition_leader_epoch=epoch)  # fmt: skip
    (batch,) = kafka.iter_batches(data)
    assert batch.size_in_bytes == len(data) and batch.compression == codec
    assert batch.last_offset == records[-1].offset
    decoded = kafka.decode_records(data, batch)
    for got, want in zip(decoded, records, strict=True):
        assert (got.offset, got.key, got.value, got.headers) == (want.offset, want.key, want.value, want.headers)
        assert got.timestamp == (log_append_time if append_time else want.timestamp)
    if not append_time:
        assert batch.max_timestamp == max(r.timestamp for r in records)


@given(kafka_records(), codecs)
def test_batches_read_by_kafka_python(records: list[kafka.Record], codec: kafka.Compression) -> None:
    data = kafka.encode_batch(records, base_offset=0, compression=codec, producer_id=7, producer_epoch=1,
                              base_sequence=3)  # fmt: skip
    theirs = list(DefaultRecordBatch(bytearray(data)))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in theirs] == [
        (r.offset, r.timestamp, r.key, r.value) for r in records
    ]
    assert [list(r.headers) for r in theirs] == [[(h.key, h.value) for h in r.headers] for r in records]


@given(kafka_records(), codecs)
def test_kafka_python_batches_read_by_us(records: list[kafka.Record], codec: kafka.Compression) -> None:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=KAFKA_PYTHON_CODECS[codec],
                                        is_transactional=False, producer_id=-1, producer_epoch=-1,
                                        base_sequence=-1, batch_size=2**30)  # fmt: skip
    for record in records:
        builder.append(record.offset, timestamp=record.timestamp, key=record.key, value=record.value,
                       headers=[(h.key, h.value) for h in record.headers])  # fmt: skip
    data = bytes(builder.build())
    decoded = decode_whole(data)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in records
    ]


@pytest.mark.parametrize("codec", list(kafka.Compression))
def test_codec_framing_is_kafkas(codec: kafka.Compression) -> None:
    data = bytes(range(256)) * 1000
    packed = kafka.compress(codec, data)
    assert kafka.decompress(codec, packed) == data
    if codec == kafka.Compression.SNAPPY:
        assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    if codec == kafka.Compression.LZ4:
        assert packed[4:6] == b"\x60\x40"  # FLG: v01, independent blocks, no size; BD: 64 KiB
    if codec == kafka.Compression.ZSTD:
        assert not packed[4] & 0xC0  # frame header descriptor: no content size field


def test_multi_frame_zstd_decodes_as_a_stream() -> None:
    two = kafka.compress(kafka.Compression.ZSTD, b"a" * 10) + kafka.compress(kafka.Compression.ZSTD, b"b" * 10)
    assert kafka.decompress(kafka.Compression.ZSTD, two) == b"a" * 10 + b"b" * 10


@pytest.mark.parametrize("codec", [c for c in kafka.Compression if c != kafka.Compression.NONE])
def test_truncated_or_bombing_compressed_records_are_format_errors(codec: kafka.Compression) -> None:
    packed = kafka.compress(codec, b"x" * 100_000)
    with pytest.raises(FormatError):
        kafka.decompress(codec, packed[: len(packed) // 2])
    with pytest.raises(FormatError, match="expand past"):
        kafka.decompress(codec, packed, limit=1000)


@pytest.mark.parametrize("codec", [c for c in kafka.Compression if c != kafka.Compression.NONE])
def test_records_stream_out_of_a_batch_until_the_cap(codec: kafka.Compression) -> None:
    records = [kafka.Record(i, 1000 + i, None, random.Random(i).randbytes(100_000)) for i in range(10)]
    data = kafka.encode_batch(records, base_offset=0, compression=codec)
    got = []
    with pytest.raises(FormatError, match="decompression cap of 350000 bytes .*max_decompressed_bytes"):
        for record in kafka.iter_records(data, limit=350_000):
            got.append(record)
    assert [(r.offset, r.value) for r in got] == [(r.offset, r.value) for r in records[: len(got)]]
    assert 1 <= len(got) <= 3
    assert kafka.decode_records(data) == [r for r in kafka.iter_records(data)]


def test_control_batches_and_transactional_attributes() -> None:
    marker = kafka.control_record(kafka.CONTROL_ABORT, offset=9, timestamp=5, coordinator_epoch=3)
    data = kafka.encode_batch([marker], base_offset=9, producer_id=11, producer_epoch=2, transactional=True,
                              control=True)  # fmt: skip
    (batch,) = kafka.iter_batches(data)
    assert batch.attributes == 0x30 and batch.is_control and batch.is_transactional
    (record,) = kafka.decode_records(data, batch)
    assert kafka.control_type(record) == kafka.CONTROL_ABORT
    assert record.value == struct.pack(">hi", 0, 3)
    with pytest.raises(FormatError):
        kafka.control_type(kafka.Record(1, 1, b"x", None))


def test_aborted_transactions_are_collected_as_kafka_collects_them() -> None:
    asked: list[int] = []

    def indexes(segments: list[list[kafka.AbortedTxn]]):  # type: ignore[no-untyped-def]
        for number, entries in enumerate(segments):
            asked.append(number)
            yield entries

    first = [kafka.AbortedTxn(1, 0, 5, 3)]
    second = [kafka.AbortedTxn(2, 8, 12, 9), kafka.AbortedTxn(3, 14, 20, 21)]
    third = [kafka.AbortedTxn(4, 30, 31, 32)]
    # Entries overlapping [6, 15) are kept; the entry whose last stable offset reaches 15 ends the search.
    found = kafka.collect_aborted_txns(indexes([first, second, third]), 6, 15)
    assert found == [second[0], second[1]] and asked == [0, 1]
    assert kafka.collect_aborted_txns([first, second, third], 0, 100) == [*first, *second, *third]


def test_the_first_open_transaction_gives_the_last_stable_offset() -> None:
    def producer(pid: int, current_txn_first_offset: int) -> kafka.ProducerSnapshotEntry:
        return kafka.ProducerSnapshotEntry(pid, 0, 0, 50, 0, 0, 0, current_txn_first_offset)

    assert kafka.first_undecided([producer(1, -1), producer(2, 40), producer(3, 17)]) == producer(3, 17)
    assert kafka.first_undecided([producer(1, -1)]) is None and kafka.first_undecided([]) is None


@given(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.integers(0, 2**62), st.integers(0, 2**62),
                          st.integers(0, 2**62)), max_size=20))  # fmt: skip
def test_txn_index_round_trip(rows: list[tuple[int, int, int, int]]) -> None:
    entries = [kafka.AbortedTxn(*row) for row in rows]
    encoded = kafka.encode_txn_index(entries)
    assert len(encoded) == 34 * len(entries)
    assert kafka.decode_txn_index(encoded) == entries


@given(st.lists(st.builds(kafka.ProducerSnapshotEntry, *[st.integers(-(2**15), 2**15 - 1)] * 8), max_size=10))
def test_producer_snapshot_round_trip(entries: list[kafka.ProducerSnapshotEntry]) -> None:
    assert kafka.decode_producer_snapshot(kafka.encode_producer_snapshot(entries)) == entries


@given(st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 2**62)), max_size=10))
def test_leader_epochs_round_trip(entries: list[tuple[int, int]]) -> None:
    assert kafka.decode_leader_epochs(kafka.encode_leader_epochs(entries)) == entries


DECODERS: list[Callable[[bytes], Any]] = [
    decode_whole,
    lambda d: kafka.decode_offset_index(d, 0),
    lambda d: kafka.decode_time_index(d, 0),
    kafka.decode_txn_index,
    kafka.decode_producer_snapshot,
    kafka.decode_leader_epochs,
    lambda d: kafka.derive_indexes(d, 0),
]


@given(st.binary(max_size=400), st.sampled_from(range(len(DECODERS))))
def test_arbitrary_bytes_raise_only_format_errors(data: bytes, which: int) -> None:
    only_format_errors(DECODERS[which], data)


LOGS = [case.log for case in kafka_cases()]
# Base offset (bytes 0-7) and partition leader epoch (12-15) are outside the CRC, as in Kafka.
UNCHECKED = range(0, 8), range(12, 16)


@given(st.sampled_from(range(len(LOGS))), st.data())
def test_truncated_or_bit_flipped_logs_raise_only_format_errors(which: int, data: st.DataObject) -> None:
    log = LOGS[which]
    cut = data.draw(st.integers(0, len(log)))
    only_format_errors(decode_whole, log[:cut])
    position = data.draw(st.integers(0, len(log) - 1))
    flipped = bytearray(log)
    flipped[position] ^= 1 << data.draw(st.integers(0, 7))
    start = max(b.position for b in kafka.iter_batches(log) if b.position <= position)
    if any(position - start in unchecked for unchecked in UNCHECKED):
        only_format_errors(decode_whole, bytes(flipped))
    else:
        with pytest.raises(FormatError):
            decode_whole(bytes(flipped))


@given(kafka_records(), codecs, st.data())
def test_damaged_records_past_the_crc_raise_only_format_errors(
    records: list[kafka.Record], codec: kafka.Compression, data: st.DataObject
) -> None:
    batch = bytearray(kafka.encode_batch(records, base_offset=0, compression=codec))
    position = data.draw(st.integers(kafka.BATCH_HEADER_LENGTH, len(batch) - 1))
    batch[position] ^= 1 << data.draw(st.integers(0, 7))
    # decode_records trusts the caller to have checked the CRC; damage it cannot see must still be a FormatError.
    only_format_errors(lambda d: kafka.decode_records(d), bytes(batch))
