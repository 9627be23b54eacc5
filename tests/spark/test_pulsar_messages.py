"""pulsar-offload decodes Pulsar messages: payloads built here from Pulsar's protobufs."""

from __future__ import annotations

import struct
import uuid
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.proto import MessageMetadata, PulsarApi_pb2, SingleMessageMetadata

pytestmark = pytest.mark.spark

KeyValue = PulsarApi_pb2.KeyValue
EPOCH_MS = 1_763_000_000_000


def framed(metadata: MessageMetadata, payload: bytes) -> bytes:
    serialized = metadata.SerializeToString()
    # Every entry carries the client's checksum section, as brokers store it.
    return struct.pack(">HII", 0x0E01, 0, len(serialized)) + serialized + payload


def expected_row(*values: Any) -> tuple[Any, ...]:
    """A row in schema order from times in epoch milliseconds, as a UTC session collects them."""

    def ts(ms: int | None) -> datetime | None:
        return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)

    return (*values[:4], ts(values[4]), ts(values[5]), *values[6:])


def build_ledger(ledger_id: int) -> tuple[list[bytes], list[tuple[Any, ...]]]:
    """Entries alternating unbatched and (sometimes compressed) batched messages, and the rows they must give."""
    entries: list[bytes] = []
    rows: list[tuple[Any, ...]] = []
    for entry_id in range(120):
        publish = EPOCH_MS + ledger_id * 1000 + entry_id
        producer = f"producer-{entry_id % 3}"
        if entry_id % 2 == 0:
            payload = f"single {ledger_id}/{entry_id}".encode() * (entry_id % 7 + 1)
            metadata = MessageMetadata(
                producer_name=producer, sequence_id=entry_id, publish_time=publish,
                properties=[KeyValue(key="entry", value=str(entry_id))],
            )  # fmt: skip
            event = None
            if entry_id % 4 == 0:
                metadata.partition_key, metadata.event_time = f"key-{entry_id}", publish - 500
                event = publish - 500
            entries.append(framed(metadata, payload))
            key = metadata.partition_key if entry_id % 4 == 0 else None
            rows.append(expected_row(ledger_id, entry_id, None, payload, publish, event, key,
                                     {"entry": str(entry_id)}, producer, entry_id))  # fmt: skip
            continue
        count = entry_id % 5 + 1
        batch = b""
        for index in range(count):
            body = f"batched {entry_id}.{index}".encode()
            single = SingleMessageMetadata(
                payload_size=len(body), partition_key=f"k{index}", event_time=publish - index,
                properties=[KeyValue(key="i", value=str(index))],
            )  # fmt: skip
            serialized = single.SerializeToString()
            batch += struct.pack(">I", len(serialized)) + serialized + body
            rows.append(expected_row(ledger_id, entry_id, index, body, publish, publish - index, f"k{index}",
                                     {"i": str(index)}, producer, entry_id * 10 + index))  # fmt: skip
        metadata = MessageMetadata(
            producer_name=producer, sequence_id=entry_id * 10, publish_time=publish, num_messages_in_batch=count
        )
        if entry_id % 3 == 0:
            metadata.compression, metadata.uncompressed_size = PulsarApi_pb2.ZLIB, len(batch)
            batch = zlib.compress(batch)
        entries.append(framed(metadata, batch))
    return entries, rows


@pytest.fixture(scope="module")
def message_bucket(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[tuple[Any, ...]]]:
    url = f"file://{Path(tmp_path_factory.mktemp('messages')) / 'bucket'}"
    offloader = open_offloader(url, max_block_size=4096)
    expected: list[tuple[Any, ...]] = []
    for ledger_id in (11, 12, 13):
        entries, rows = build_ledger(ledger_id)
        offloader.offload(InMemoryReadHandle(ledger_id, entries), uuid.uuid4())
        expected += rows
    return url, expected


def as_tuple(row: Any) -> tuple[Any, ...]:
    values = row.asDict()
    values["payload"] = None if values["payload"] is None else bytes(values["payload"])
    return tuple(values.values())


@pytest.mark.parametrize("arrow", ["true", "false"])
def test_decoded_columns_match_what_the_producer_sent(
    spark: Any, message_bucket: tuple[str, list[tuple[Any, ...]]], arrow: str
) -> None:
    url, expected = message_bucket
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    frame = spark.read.format("pulsar-offload").option("arrow", arrow).option("maxRecordsPerBatch", "50").load(url)
    rows = sorted((as_tuple(r) for r in frame.collect()), key=lambda r: (r[0], r[1], r[2] if r[2] is not None else -1))
    assert rows == sorted(expected, key=lambda r: (r[0], r[1], r[2] if r[2] is not None else -1))
    per_batch = frame.where("batch_index is not null").groupBy("ledger_id", "entry_id").count()
    assert {r["count"] for r in per_batch.collect()} == {2, 3, 4, 5, 1}


def test_strict_decoding_names_the_entry_that_is_not_a_message(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=EPOCH_MS)
    entries = [framed(metadata, b"ok"), b"not a pulsar message"]
    open_offloader(url).offload(InMemoryReadHandle(21, entries), uuid.uuid4())
    auto = spark.read.format("pulsar-offload").load(url).orderBy("entry_id").collect()
    assert [(r.entry_id, bytes(r.payload), r.producer_name) for r in auto] == [
        (0, b"ok", "p"), (1, b"not a pulsar message", None)
    ]  # fmt: skip
    with pytest.raises(Exception, match="ledger 21 entry 1 is not a Pulsar message"):
        spark.read.format("pulsar-offload").option("decode", "pulsar").load(url).collect()


def test_publish_time_filters_return_exactly_their_rows_with_and_without_pushdown(
    spark: Any, message_bucket: tuple[str, list[tuple[Any, ...]]]
) -> None:
    url, expected = message_bucket
    low, high = (
        datetime.fromtimestamp((EPOCH_MS + 12_030) / 1000, UTC),
        datetime.fromtimestamp((EPOCH_MS + 13_010) / 1000, UTC),
    )
    wanted = sorted(
        (r[0], r[1], r[2] if r[2] is not None else -1)
        for r in expected
        if low.replace(tzinfo=None) <= r[4] < high.replace(tzinfo=None)
    )
    assert wanted and len(wanted) < len(expected)
    stamp = "%Y-%m-%d %H:%M:%S.%f"
    query = f"publish_time >= timestamp'{low:{stamp}}' AND publish_time < timestamp'{high:{stamp}}'"
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    for pushdown in ("false", "true"):
        spark.conf.set("spark.sql.python.filterPushdown.enabled", pushdown)
        try:
            frame = spark.read.format("pulsar-offload").option("filterPushdown", pushdown).load(url).where(query)
            got = sorted((r.ledger_id, r.entry_id, r.batch_index if r.batch_index is not None else -1)
                         for r in frame.collect())  # fmt: skip
        finally:
            spark.conf.unset("spark.sql.python.filterPushdown.enabled")
        assert got == wanted, pushdown


def test_publish_time_bounds_drop_messages_in_the_task(message_bucket: tuple[str, list[tuple[Any, ...]]]) -> None:
    from dataclasses import replace

    from offload_core.spark.column_bounds import ANY_VALUE
    from offload_core.spark.pulsar_offload import plan_partitions, read_partition
    from offload_core.spark.read_options import Decode
    from offload_core.spark.store_tasks import Store

    url, expected = message_bucket
    store = Store.of(url)
    every = [row for p in plan_partitions({"path": url}) for row in read_partition(store, p, Decode.AUTO)]
    low_us, high_us = (EPOCH_MS + 12_030) * 1000, (EPOCH_MS + 13_010) * 1000 - 1
    bounded = ANY_VALUE.at_least(low_us).at_most(high_us)
    kept = [
        row
        for p in plan_partitions({"path": url}, publish_time_bounds=bounded)
        for row in read_partition(store, replace(p, publish_time_bounds=bounded), Decode.AUTO)
    ]
    assert len(every) == len(expected)
    assert kept == [row for row in every if row[4] is not None and low_us <= row[4] * 1000 <= high_us]
    assert 0 < len(kept) < len(every)
