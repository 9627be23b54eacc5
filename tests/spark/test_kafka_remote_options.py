"""``kafka-remote`` takes the options of Spark's own Kafka source that mean
something for a tiered copy, with Spark's semantics and JSON forms."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from offload_core.errors import ConfigError, NotFoundError
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.rsm.types import TopicIdPartition
from offload_core.spark.kafka_remote import plan_partitions, read_partition
from offload_core.spark.store_tasks import Store
from tests.rsm.segments import numbered_segments, write_partition

pytestmark = pytest.mark.spark
START_TS = 1_700_000_000_000  # offset o of numbered_segments has timestamp START_TS + 1000 * (o - o % 5) + o % 5


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """orders-0 (300 offsets in 3 segments), orders-1 (100), ordersx-0 (100), audit-0 (100)."""
    root = tmp_path_factory.mktemp("kafka-options")
    url = f"file://{root / 'store'}"
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    for name, count in (("orders-0", 3), ("orders-1", 1), ("ordersx-0", 1), ("audit-0", 1)):
        tp, segments = read_partition_dir(write_partition(root, name, numbered_segments(count)))
        for segment in segments:
            rsm.copy_log_segment(tp, segment.data)
    return url


def options(url: str, **given: str) -> dict[str, str]:
    return {"url": url, "prefix": "tiered", **given}


def offsets(plan: list[Any]) -> list[tuple[str, int, int]]:
    return sorted((p.topic, p.partition, o) for p in plan for r in p.ranges for o in range(r.first, r.end))


def test_subscribe_pattern_and_assign_pick_partitions(store: str) -> None:
    # Spark matches the whole topic name against the pattern.
    assert {t for t, _, _ in offsets(plan_partitions(options(store, subscribePattern="orders")))} == {"orders"}
    assert {t for t, _, _ in offsets(plan_partitions(options(store, subscribePattern="ord.*")))} == {
        "orders",
        "ordersx",
    }
    assigned = offsets(plan_partitions(options(store, assign=json.dumps({"orders": [1], "audit": [0]}))))
    assert assigned == [("audit", 0, o) for o in range(100)] + [("orders", 1, o) for o in range(100)]
    with pytest.raises(ConfigError, match="exactly one .given: subscribe, assign"):
        plan_partitions(options(store, subscribe="orders", assign='{"orders": [0]}'))
    with pytest.raises(ConfigError, match="assign="):
        plan_partitions(options(store, assign='["orders"]'))


def test_timestamps_are_first_offsets_at_or_after_them(spark: Any, store: str) -> None:
    at_150 = str(START_TS + 150_000)
    # One timestamp for every partition: orders-1's records all come before it (Spark's default strategy: fail).
    with pytest.raises(ConfigError, match="no record of orders-1 in the store has a timestamp at or after"):
        plan_partitions(options(store, subscribe="orders", startingTimestamp=at_150))
    by_partition = json.dumps({"orders": {"0": START_TS + 150_001}})
    ending = json.dumps({"orders": {"0": START_TS + 160_000}})
    plan = plan_partitions(options(store, assign='{"orders": [0]}', startingOffsetsByTimestamp=by_partition,
                                   endingOffsetsByTimestamp=ending))  # fmt: skip
    assert offsets(plan) == [("orders", 0, o) for o in range(151, 160)]
    given = options(store, assign='{"orders": [0]}', startingTimestamp=at_150, endingTimestamp=str(START_TS + 155_000))
    frame = spark.read.format("kafka-remote").options(**given).load()
    assert sorted(r.offset for r in frame.select("offset").collect()) == list(range(150, 155))


def test_a_starting_timestamp_past_every_record(store: str) -> None:
    late = str(START_TS + 10_000_000)
    with pytest.raises(ConfigError, match="orders-0 in the store has a timestamp at or after"):
        plan_partitions(options(store, assign='{"orders": [0]}', startingTimestamp=late))
    fallback = options(store, assign='{"orders": [0]}', startingTimestamp=late)
    assert plan_partitions({**fallback, "startingOffsetsByTimestampStrategy": "latest"}) == []
    # An ending timestamp no record reaches is the log's end, as in Spark.
    ending = plan_partitions(options(store, assign='{"orders": [0]}', endingTimestamp=late))
    assert offsets(ending) == [("orders", 0, o) for o in range(300)]


def test_spark_offset_forms(store: str) -> None:
    plan = plan_partitions(options(store, subscribe="orders", startingOffsets='{"orders": {"0": -2, "1": 90}}',
                                   endingOffsets='{"orders": {"0": 5, "1": -1}}'))  # fmt: skip
    assert offsets(plan) == [("orders", 0, o) for o in range(5)] + [("orders", 1, o) for o in range(90, 100)]
    with pytest.raises(ConfigError, match="startingOffsets for orders-0 is -1: use an offset or -2"):
        plan_partitions(options(store, topic="orders", startingOffsets='{"orders": {"0": -1}}'))
    with pytest.raises(ConfigError, match="endingOffsets for orders-0 is -2: use an offset or -1"):
        plan_partitions(options(store, topic="orders", endingOffsets='{"orders": {"0": -2}}'))
    with pytest.raises(ConfigError, match="endingOffsets=earliest"):
        plan_partitions(options(store, topic="orders", endingOffsets="earliest"))


def test_unknown_options_fail_and_kafka_client_options_are_ignored(
    store: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(ConfigError, match="kafka-remote has no option startingoffset:"):
        plan_partitions(options(store, topic="orders", startingOffset="earliest"))
    with caplog.at_level(logging.WARNING, logger="offload_core.spark.kafka_options"):
        plan = plan_partitions(options(store, topic="orders", **{"kafka.bootstrap.servers": "broker:9092",
                                                                  "kafka.security.protocol": "SSL",
                                                                  "groupIdPrefix": "x"}))  # fmt: skip
    assert len(offsets(plan)) == 400
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith("kafka-remote ignores groupidprefix, kafka.bootstrap.servers, kafka.security.protocol")


def test_min_partitions_and_max_records_per_partition(spark: Any, store: str) -> None:
    every = [("orders", 0, o) for o in range(300)]
    (packed,) = plan_partitions(options(store, assign='{"orders": [0]}'))  # its 3 small segments, packed
    assert [(r.first, r.end) for r in packed.ranges] == [(0, 100), (100, 200), (200, 300)]
    split = plan_partitions(options(store, assign='{"orders": [0]}', minPartitions="7"))
    assert len(split) >= 7 and offsets(split) == every
    capped = plan_partitions(options(store, assign='{"orders": [0]}', maxRecordsPerPartition="40"))
    assert all(p.offset_count <= 40 for p in capped) and offsets(capped) == every
    frame = spark.read.format("kafka-remote").options(**options(store, topic="orders", minPartitions="9")).load()
    assert frame.rdd.getNumPartitions() >= 9
    assert sorted((r.partition, r.offset) for r in frame.select("partition", "offset").collect()) == sorted(
        [(0, o) for o in range(300)] + [(1, o) for o in range(100)]
    )


def _copied(tmp_path: Path) -> tuple[str, RemoteStorageManager, TopicIdPartition]:
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(2)))
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    return url, rsm, tp


def test_an_object_gone_between_planning_and_reading(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url, _, _ = _copied(tmp_path)
    (packed,) = plan_partitions(options(url, topic="orders"))  # both segments, the first to vanish
    lost = packed.log_key(packed.ranges[0])
    (tmp_path / "store" / lost).unlink()
    with pytest.raises(NotFoundError, match=f"{lost} .offsets 0 to 99. vanished .*failOnDataLoss=false"):
        list(read_partition(Store.of(url), packed))
    (skipping,) = plan_partitions(options(url, topic="orders", failOnDataLoss="false"))
    assert skipping.ranges[1:] == packed.ranges[1:]  # the manifest is still there: the segment is still planned
    with caplog.at_level(logging.WARNING, logger="offload_core.spark.data_loss"):
        rows = list(read_partition(Store.of(url), skipping))
    assert [row[4] for row in rows] == list(range(100, 200))
    (record,) = caplog.records
    assert record.name == "offload_core.spark.data_loss" and record.levelno == logging.WARNING
    assert record.getMessage() == (
        f"kafka-remote: {lost} (offsets 0 to 99) vanished after the read was planned; skipped, as failOnDataLoss=false"
    )
    context = dict(record.context)  # type: ignore[attr-defined]
    assert re.fullmatch("[0-9a-f]{32}", context.pop("skip_id"))  # the skip's id, as accumulated too
    assert context == {"source": "kafka-remote", "store": url, "key": lost, "topic": "orders", "partition": "0",
                              "first_offset": "0", "last_offset": "99", "reason": "vanished"}  # fmt: skip


def test_starting_offsets_retention_removed(tmp_path: Path) -> None:
    url, rsm, tp = _copied(tmp_path)
    rsm.delete_log_segment(rsm.list_remote_segments(tp)[0])
    starting = json.dumps({"orders": {"0": 42}})
    with pytest.raises(NotFoundError, match="orders-0: offsets 42 to 99 are no longer in the store"):
        plan_partitions(options(url, topic="orders", startingOffsets=starting))
    kept = plan_partitions(options(url, topic="orders", startingOffsets=starting, failOnDataLoss="false"))
    assert offsets(kept) == [("orders", 0, o) for o in range(100, 200)]


def test_our_layout_reads_the_store_and_prefix_from_config_as_the_cli_does(store: str, tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text(f"rsm.config.storage.url={store}\nrsm.config.key.prefix=elsewhere\n", encoding="latin-1")
    expected = offsets(plan_partitions(options(store, topic="audit")))
    overridden = {"config": str(properties), "topic": "audit", "rsm.config.key.prefix": "tiered"}
    assert offsets(plan_partitions(overridden)) == expected
    assert offsets(plan_partitions({"config": str(properties), "topic": "audit", "prefix": "tiered"})) == expected
    assert offsets(plan_partitions({"rsm.config.storage.url": store, "rsm.config.key.prefix": "tiered",
                                    "topic": "audit"})) == expected  # fmt: skip
    assert plan_partitions({"config": str(properties), "topic": "audit"}) == []  # the file's prefix: nothing there
    with pytest.raises(ConfigError, match="unknown RemoteStorageManager setting"):
        plan_partitions(options(store, topic="audit", **{"rsm.config.no.such.key": "1"}))
