"""The ``kafka-remote`` Spark source: tiered Kafka segments read with the
schema of Spark's own Kafka source, a topic-partition's small segments packed
into one Spark partition."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cramjam
import pytest

from offload_core.formats import kafka
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark.kafka_remote import plan_partitions
from tests.kafka_vectors import b64, kafka_cases
from tests.legacy_message_sets import upgraded_topic
from tests.rsm.segments import (
    TOPIC_ID,
    SegmentSpec,
    fixture_partition,
    numbered_segments,
    overlapping_copies,
    plain_batch,
    recompressed,
    transactional_segment,
    undecided_transaction_segments,
    write_partition,
)

pytestmark = pytest.mark.spark
REBORN = "tvHCaSDsQZWsjr5rbtCjxA"

# Spark's Kafka source with includeHeaders=true, as its docs give it.
SPARK_KAFKA_SCHEMA = ("struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
                      "timestampType:int,headers:array<struct<key:string,value:binary>>>")  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("kafka")
    url = f"file://{root / 'store'}"
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    directories = [fixture_partition(case, root) for case in kafka_cases()]
    directories += [write_partition(root, "orders-0", numbered_segments(3)),
                    write_partition(root, "orders-1", numbered_segments(1)),
                    write_partition(root, "txn-0", [transactional_segment()])]  # fmt: skip
    # The first fixture's batches as a librdkafka producer sends snappy: raw, without xerial framing.
    raw = recompressed(kafka_cases()[0].log, kafka.Compression.SNAPPY, lambda d: bytes(cramjam.snappy.compress_raw(d)))
    directories.append(write_partition(root, "rawsnappy-0", [SegmentSpec(raw)]))
    directories.append(write_partition(root, "old-0", [SegmentSpec(entries) for entries in upgraded_topic()[0]]))
    for directory in directories:
        tp, segments = read_partition_dir(directory)
        for segment in segments:
            rsm.copy_log_segment(tp, segment.data)
    # Only the rolled segment: producer 77's transaction stays undecided in the remote log.
    tp, (rolled, _) = read_partition_dir(write_partition(root, "undecided-0", undecided_transaction_segments()))
    rsm.copy_log_segment(tp, rolled.data)
    # reborn-0, deleted and created again: two topic ids under one name.
    for topic_id, count in ((TOPIC_ID, 5), (REBORN, 3)):
        batch = plain_batch(0, count, timestamp=1_700_000_000_000, size=10)
        tp, (only,) = read_partition_dir(write_partition(root / topic_id, "reborn-0", [SegmentSpec([batch])],
                                                         topic_id=topic_id))  # fmt: skip
        rsm.copy_log_segment(tp, only.data)
    return url


def read(spark: Any, url: str, **options: str) -> Any:
    return spark.read.format("kafka-remote").option("url", url).option("prefix", "tiered").options(**options).load()


def test_schema_is_sparks_kafka_schema(spark, store) -> None:
    frame = read(spark, store, topic="orders", includeHeaders="true")
    assert frame.schema.simpleString() == SPARK_KAFKA_SCHEMA
    # Spark's default: no headers column.
    assert read(spark, store, topic="orders").columns == [f.name for f in frame.schema.fields][:-1]
    assert "headers" not in read(spark, store, topic="orders", includeHeaders="false").columns


@pytest.mark.parametrize("case", kafka_cases(), ids=lambda c: c.name)
def test_fixture_records_every_field(spark, store, case) -> None:
    rows = read(spark, store, topic=case.spec["topic"], includeHeaders="true").orderBy("offset").collect()
    expected = [r for batch in case.spec["batches"] for r in batch["records"]]
    assert len(rows) == len(expected)
    for row, want in zip(rows, expected, strict=True):
        assert (row.topic, row.partition, row.offset) == (case.spec["topic"], 0, want["offset"])
        assert (row.key, row.value) == (b64(want["key"]), b64(want["value"]))
        assert int(row.timestamp.timestamp() * 1000) == want["timestamp"] and row.timestampType == 0
        assert [(h.key, h.value) for h in row.headers] == [(h["key"], b64(h["value"])) for h in want["headers"]]


def test_raw_snappy_records_every_field(spark, store) -> None:
    rows = read(spark, store, topic="rawsnappy", includeHeaders="true").orderBy("offset").collect()
    expected = [r for batch in kafka_cases()[0].spec["batches"] for r in batch["records"]]
    assert [(row.offset, row.key, row.value, int(row.timestamp.timestamp() * 1000)) for row in rows] == [
        (want["offset"], b64(want["key"]), b64(want["value"]), want["timestamp"]) for want in expected
    ]
    assert [[(h.key, h.value) for h in row.headers] for row in rows] == [
        [(h["key"], b64(h["value"])) for h in want["headers"]] for want in expected
    ]


def test_magic_0_and_1_records_with_sparks_timestamp_types(spark, store) -> None:
    rows = read(spark, store, topic="old", includeHeaders="true").orderBy("offset").collect()
    assert [(row.offset, row.key, row.value, row.timestampType, row.headers) for row in rows] == [
        (offset, key, value, kind, []) for offset, _, key, value, kind in upgraded_topic()[1]
    ]
    # Spark's timestamp column is the record's milliseconds; magic 0 has none (-1 ms).
    assert [round(row.timestamp.timestamp() * 1000) for row in rows] == [t for _, t, *_ in upgraded_topic()[1]]
    ranged = read(spark, store, topic="old", startingOffsets='{"old": {"0": 7}}', endingOffsets='{"old": {"0": 17}}')
    assert sorted(r.offset for r in ranged.select("offset").collect()) == list(range(7, 17))


def test_partitions_and_offset_ranges(spark, store) -> None:
    options = {"url": store, "prefix": "tiered", "topic": "orders"}
    # One per topic-partition: its small remote segments packed into one.
    assert sorted((p.partition, len(p.ranges)) for p in plan_partitions(options)) == [(0, 3), (1, 1)]
    frame = read(spark, store, subscribe="orders", partitions="0")
    assert frame.count() == 300
    ranged = read(spark, store, topic="orders", startingOffsets=json.dumps({"orders": {"0": 95, "1": -2}}),
                  endingOffsets=json.dumps({"orders": {"0": 205, "1": 3}}))  # fmt: skip
    got = sorted((r.partition, r.offset) for r in ranged.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(95, 205)] + [(1, o) for o in range(3)]
    assert [r.offset for r in read(spark, store, topic="orders", partitions="1").select("offset").collect()] == list(
        range(100)
    )


def test_read_committed_and_column_pruning(spark, store) -> None:
    offsets = [r.offset for r in read(spark, store, topic="txn").orderBy("offset").collect()]
    assert offsets == [0, 1, 2, 4, 5, 7, 8]
    committed = read(spark, store, topic="txn", **{"kafka.isolation.level": "read_committed"})
    assert [r.offset for r in committed.orderBy("offset").collect()] == [0, 1, 2, 7, 8]
    pruned = (spark.read.format("kafka-remote").schema("offset bigint, value binary")
              .options(url=store, prefix="tiered", topic="txn").load())  # fmt: skip
    assert pruned.columns == ["offset", "value"] and pruned.count() == 7


def test_read_committed_stops_at_the_last_stable_offset(spark, store) -> None:
    every = read(spark, store, topic="undecided").orderBy("offset").collect()
    assert [r.offset for r in every] == list(range(7))
    committed = read(spark, store, topic="undecided", **{"kafka.isolation.level": "read_committed"})
    assert [r.offset for r in committed.orderBy("offset").collect()] == [0, 1]


def test_bad_options_are_clear_errors(tmp_path: Path) -> None:
    from offload_core.errors import ConfigError

    with pytest.raises(ConfigError, match="needs .option"):
        plan_partitions({"url": f"file://{tmp_path}"})
    with pytest.raises(ConfigError, match="legal Kafka topic"):
        plan_partitions({"url": f"file://{tmp_path}", "topic": "../x"})
    with pytest.raises(ConfigError, match="startingOffsets"):
        plan_partitions({"url": f"file://{tmp_path}", "topic": "t", "startingOffsets": "{oops"})
    for cap in ("0", "-5", "lots"):
        with pytest.raises(ConfigError, match="kafka-remote: maxDecompressedBytes is a positive integer"):
            plan_partitions({"url": f"file://{tmp_path}", "topic": "t", "maxDecompressedBytes": cap})


def test_a_recreated_topic_is_read_by_its_topic_id(spark, store) -> None:
    from offload_core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"reborn-0 has 2 topic ids in the store \(.*\).*topicId"):
        plan_partitions({"url": store, "prefix": "tiered", "topic": "reborn"})
    for topic_id, count in ((TOPIC_ID, 5), (REBORN, 3)):
        rows = read(spark, store, topic="reborn", topicId=topic_id).orderBy("offset").collect()
        assert [r.offset for r in rows] == list(range(count))


def test_overlapping_copies_of_a_leader_change_give_each_offset_once(spark, tmp_path) -> None:
    case = kafka_cases()[0]
    old, new, cut = overlapping_copies(case, tmp_path)  # 0..51 in epoch 0, then 20..51 in epoch 1
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    for directory in (old, new):
        tp, (segment,) = read_partition_dir(directory)
        rsm.copy_log_segment(tp, segment.data)
    rows = read(spark, url, topic=case.spec["topic"]).orderBy("offset").collect()
    expected = [r for batch in case.spec["batches"] for r in batch["records"]]
    assert [(row.offset, row.key, row.value, int(row.timestamp.timestamp() * 1000)) for row in rows] == [
        (want["offset"], b64(want["key"]), b64(want["value"]), want["timestamp"]) for want in expected
    ]
    ranged = read(spark, url, topic=case.spec["topic"], startingOffsets=json.dumps({case.spec["topic"]: {"0": 15}}),
                  endingOffsets=json.dumps({case.spec["topic"]: {"0": 30}}))  # fmt: skip
    assert sorted(r.offset for r in ranged.select("offset").collect()) == list(range(15, 30))


def test_read_committed_refuses_a_cut_transaction_index(spark, tmp_path) -> None:
    url = f"file://{tmp_path / 'store'}"
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "txn-0", [transactional_segment()]))
    RemoteStorageManager(open_driver(url), prefix="tiered").copy_log_segment(tp, segment.data)
    (txn_index,) = (tmp_path / "store" / "tiered").glob("*/*.txnindex")
    txn_index.write_bytes(txn_index.read_bytes()[:-34])  # one whole entry (i16 version, four i64) less
    key = str(txn_index.relative_to(tmp_path / "store"))
    with pytest.raises(Exception, match="FormatError") as refused:
        read(spark, url, topic="txn", **{"kafka.isolation.level": "read_committed"}).collect()
    assert f"{key} holds 0 bytes but its segment's manifest recorded 34" in str(refused.value)


def test_the_decompression_cap_is_an_option(spark, tmp_path) -> None:
    """A magic 1 gzip wrapper expanding to 2 MiB: refused under a 1 MiB cap
    (naming the option), read with it raised. Before, Spark took no cap and
    always used the 256 MiB default."""
    from tests.test_cli_kafka_decompression_cap import RAISED, SMALL, wrapper_then_batch

    url = f"file://{tmp_path / 'store'}"
    tp, (segment,) = read_partition_dir(wrapper_then_batch(tmp_path))
    RemoteStorageManager(open_driver(url), prefix="tiered", max_decompressed_bytes=int(RAISED)).copy_log_segment(
        tp, segment.data
    )
    with pytest.raises(Exception, match="decompression cap of 1048576 bytes") as refused:
        read(spark, url, topic="old", maxDecompressedBytes=SMALL).collect()
    assert "maxDecompressedBytes" in str(refused.value)
    rows = read(spark, url, topic="old", maxDecompressedBytes=RAISED).select("offset").collect()
    assert [row.offset for row in rows] == [0, 1, 2]
