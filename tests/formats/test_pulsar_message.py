"""Pulsar messages inside entries, framed by hand from Pulsar's protobufs."""

from __future__ import annotations

import contextlib
import struct
import zlib

import pyarrow
import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import FormatError
from offload_core.formats.pulsar_message import (
    PulsarMessage,
    decode_entry,
    encode_batch_payload,
    encode_entry,
)
from offload_core.proto import BrokerEntryMetadata, MessageMetadata, PulsarApi_pb2, SingleMessageMetadata

KeyValue = PulsarApi_pb2.KeyValue
Compression = PulsarApi_pb2.CompressionType


def framed(metadata: MessageMetadata, payload: bytes) -> bytes:
    serialized = metadata.SerializeToString()
    return struct.pack(">I", len(serialized)) + serialized + payload


def batch_payload(*messages: tuple[SingleMessageMetadata, bytes]) -> bytes:
    out = b""
    for single, body in messages:
        serialized = single.SerializeToString()
        out += struct.pack(">I", len(serialized)) + serialized + body
    return out


def test_an_unbatched_message_decodes_to_its_fields() -> None:
    metadata = MessageMetadata(
        producer_name="standalone-0-3",
        sequence_id=41,
        publish_time=1_700_000_000_123,
        event_time=1_699_999_999_000,
        partition_key="user-7",
        properties=[KeyValue(key="region", value="eu"), KeyValue(key="kind", value="click")],
    )
    assert decode_entry(framed(metadata, b"hello")) == [
        PulsarMessage(
            None, b"hello", 1_700_000_000_123, 1_699_999_999_000, "user-7",
            (("region", "eu"), ("kind", "click")), "standalone-0-3", 41,
        )
    ]  # fmt: skip


def test_checksum_and_broker_entry_metadata_sections_are_skipped() -> None:
    metadata = MessageMetadata(producer_name="p", sequence_id=1, publish_time=5)
    broker = BrokerEntryMetadata(broker_timestamp=9, index=77).SerializeToString()
    entry = (
        struct.pack(">HI", 0x0E02, len(broker)) + broker + struct.pack(">HI", 0x0E01, 0xDEADBEEF)
        + framed(metadata, b"x")
    )  # fmt: skip
    (message,) = decode_entry(entry)
    assert (message.payload, message.publish_time, message.event_time, message.key) == (b"x", 5, None, None)
    assert entry == encode_entry(
        metadata, b"x", checksum=0xDEADBEEF, broker_entry_metadata=BrokerEntryMetadata(broker_timestamp=9, index=77)
    )


def test_a_batch_is_exploded_with_each_messages_own_metadata() -> None:
    singles = [
        (SingleMessageMetadata(payload_size=1, partition_key="a", event_time=10,
                               properties=[KeyValue(key="n", value="0")]), b"A"),
        (SingleMessageMetadata(payload_size=2, compacted_out=True), b"BB"),
        (SingleMessageMetadata(payload_size=0, null_value=True, partition_key="c"), b""),
        (SingleMessageMetadata(payload_size=3, sequence_id=900), b"DDD"),
    ]  # fmt: skip
    metadata = MessageMetadata(
        producer_name="prod", sequence_id=100, publish_time=2000, num_messages_in_batch=4, partition_key="outer"
    )
    messages = decode_entry(framed(metadata, batch_payload(*singles)))
    assert messages == [
        PulsarMessage(0, b"A", 2000, 10, "a", (("n", "0"),), "prod", 100),
        PulsarMessage(2, None, 2000, None, "c", (), "prod", 102),
        PulsarMessage(3, b"DDD", 2000, None, None, (), "prod", 900),
    ]
    assert batch_payload(*singles) == encode_batch_payload(singles)


def arrow_compress(codec: str, data: bytes) -> bytes:
    return bytes(pyarrow.Codec(codec).compress(data, asbytes=True))


@pytest.mark.parametrize(
    ("compression", "compress"),
    [
        (Compression.ZLIB, zlib.compress),
        (Compression.LZ4, lambda data: arrow_compress("lz4_raw", data)),
        (Compression.ZSTD, lambda data: arrow_compress("zstd", data)),
        (Compression.SNAPPY, lambda data: arrow_compress("snappy", data)),
    ],
)
def test_compressed_batches_decode(compression: int, compress: object) -> None:
    bodies = [b"m%d-" % index * 50 for index in range(5)]
    raw = batch_payload(*[(SingleMessageMetadata(payload_size=len(body)), body) for body in bodies])
    assert callable(compress)
    metadata = MessageMetadata(
        producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=5,
        compression=compression, uncompressed_size=len(raw),
    )  # fmt: skip
    entry = framed(metadata, compress(raw))
    assert [message.payload for message in decode_entry(entry)] == bodies
    wrong_size = MessageMetadata()
    wrong_size.CopyFrom(metadata)
    wrong_size.uncompressed_size = len(raw) + 1
    with pytest.raises(FormatError, match="decompress|fewer than"):
        decode_entry(framed(wrong_size, compress(raw)))


def test_an_encrypted_batch_is_one_row_of_ciphertext() -> None:
    metadata = MessageMetadata(
        producer_name="p", sequence_id=3, publish_time=1, num_messages_in_batch=2,
        encryption_keys=[PulsarApi_pb2.EncryptionKeys(key="k", value=b"wrapped")],
    )  # fmt: skip
    (message,) = decode_entry(framed(metadata, b"\x00ciphertext"))
    assert (message.batch_index, message.payload, message.encrypted) == (None, b"\x00ciphertext", True)


def test_markers_yield_no_messages() -> None:
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, marker_type=20)
    assert decode_entry(framed(metadata, b"marker")) == []


@pytest.mark.parametrize(
    "entry",
    [b"", b"\x00\x00", b"\x00\x00\x00\x05abc", b"plain text, not a message", b"\x00\x00\x00\x00payload"],
)
def test_entries_that_are_not_messages_are_rejected(entry: bytes) -> None:
    with pytest.raises(FormatError):
        decode_entry(entry)


def test_missing_required_fields_are_not_a_message() -> None:
    partial = MessageMetadata(producer_name="p").SerializePartialToString()
    with pytest.raises(FormatError, match="lacks required fields: sequence_id"):
        decode_entry(struct.pack(">I", len(partial)) + partial + b"x")


def test_a_batch_that_overruns_its_payload_is_rejected() -> None:
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=2)
    one = batch_payload((SingleMessageMetadata(payload_size=1), b"a"))
    with pytest.raises(FormatError, match="ends after 1"):
        decode_entry(framed(metadata, one))
    with pytest.raises(FormatError, match="past the payload"):
        decode_entry(framed(metadata, one + batch_payload((SingleMessageMetadata(payload_size=9), b"b"))))
    metadata.num_messages_in_batch = 1
    with pytest.raises(FormatError, match="unread"):
        decode_entry(framed(metadata, one + b"trailing"))


@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_ever_raise_format_error(data: bytes) -> None:
    with contextlib.suppress(FormatError):
        decode_entry(data)


@given(st.integers(min_value=0), st.data())
def test_bit_flips_in_a_batch_only_ever_raise_format_error(seed: int, data: st.DataObject) -> None:
    raw = batch_payload(*[(SingleMessageMetadata(payload_size=3, partition_key="k"), b"abc")] * 3)
    entry = bytearray(framed(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                             num_messages_in_batch=3), raw))  # fmt: skip
    position = data.draw(st.integers(min_value=0, max_value=len(entry) - 1))
    entry[position] ^= 1 << (seed % 8)
    with contextlib.suppress(FormatError):
        decode_entry(bytes(entry))


def test_a_batched_message_without_its_payload_size_is_rejected() -> None:
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, num_messages_in_batch=1)
    partial = SingleMessageMetadata(partition_key="k").SerializePartialToString()
    with pytest.raises(FormatError, match="message 0 in the batch lacks required fields: payload_size"):
        decode_entry(framed(metadata, struct.pack(">I", len(partial)) + partial))
