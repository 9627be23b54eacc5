"""spark.read.format("pulsar-offload") over a bucket of offloaded ledgers."""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.errors import ConfigError
from offload_core.formats import pulsar_v1 as v1
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.spark import BlockRangePartition, plan_partitions
from offload_core.spark.ledger_groups import LedgerGroupPartition
from tests.emulators import MotoS3
from tests.pulsar_vectors import load_vectors
from tests.spark.planned_blocks import block_partitions

pytestmark = pytest.mark.spark


def entries_of(ledger_id: int) -> list[bytes]:
    rng = random.Random(ledger_id)
    return [rng.randbytes(rng.randrange(0, 700)) for _ in range(rng.randrange(150, 400))]


@pytest.fixture
def bucket(tmp_path: Path) -> tuple[str, dict[int, list[bytes]]]:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=8192)
    ledgers = {ledger_id: entries_of(ledger_id) for ledger_id in (3, 4, 2**33 + 5)}
    for ledger_id, entries in ledgers.items():
        offloader.offload(InMemoryReadHandle(ledger_id, entries), uuid.uuid4())
    return url, ledgers


def test_every_entry_exactly_once(spark: Any, bucket: tuple[str, dict[int, list[bytes]]]) -> None:
    url, ledgers = bucket
    frame = spark.read.format("pulsar-offload").option("blocksPerPartition", "3").option("decode", "none").load(url)
    assert frame.columns == [
        "ledger_id", "entry_id", "batch_index", "payload", "publish_time", "event_time", "key", "properties",
        "producer_name", "sequence_id",
    ]  # fmt: skip
    rows = sorted((r.ledger_id, r.entry_id, bytes(r.payload)) for r in frame.collect())
    offloader = open_offloader(url)
    expected = []
    for ledger in find_offloaded_ledgers(open_driver(url)):
        handle = offloader.read_offloaded(ledger.ledger_id, ledger.uuid)
        expected += [(ledger.ledger_id, e.entry_id, e.data) for e in handle.read(0, handle.last_entry_id)]
    assert rows == sorted(expected)
    assert sorted(expected) == sorted(
        (lid, eid, data) for lid, entries in ledgers.items() for eid, data in enumerate(entries)
    )
    assert frame.where("publish_time is not null or batch_index is not null").count() == 0
    plan = plan_partitions({"path": url, "blocksPerPartition": "3"})
    assert len(plan) > len(ledgers)  # blocks, not whole ledgers, are the unit of parallelism
    assert all(1 <= len(partition.blocks) <= 3 for partition in plan)


def test_entry_ranges_read_only_the_blocks_they_need(spark: Any, bucket: tuple[str, dict[int, list[bytes]]]) -> None:
    url, ledgers = bucket
    options = {"path": url, "entries": "3:10-20,4:100-,3:25", "ledgers": str(2**33 + 5), "decode": "none"}
    frame = spark.read.format("pulsar-offload").options(**options).load()
    got = sorted((r.ledger_id, r.entry_id) for r in frame.collect())
    expected = [(3, e) for e in [*range(10, 21), 25]] + [(4, e) for e in range(100, len(ledgers[4]))]
    expected += [(2**33 + 5, e) for e in range(len(ledgers[2**33 + 5]))]
    assert got == sorted(expected)
    one_entry = plan_partitions({"path": url, "entries": "3:0"})
    (task,) = block_partitions(url, one_entry)  # the task of a packed group reads the index
    assert len(one_entry) == 1 and len(task.blocks) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"entries": "3:9-2"}, "empty or negative"),
        ({"entries": "three"}, "LEDGER:FIRST-LAST"),
        ({"ledgers": "1,x"}, "comma-separated list"),
        ({"decode": "maybe"}, "auto, pulsar or none"),
        ({"arrow": "yes"}, "true or false"),
        ({"blocksPerPartition": "0"}, "positive integer"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plan_partitions({"path": "memory://nowhere", **options})


def test_selected_ledgers_only(spark: Any, bucket: tuple[str, dict[int, list[bytes]]]) -> None:
    url, ledgers = bucket
    frame = spark.read.format("pulsar-offload").option("ledgers", "4").load(url)
    assert frame.count() == len(ledgers[4])
    assert {r.ledger_id for r in frame.select("ledger_id").distinct().collect()} == {4}


def test_partitions_pickle(bucket: tuple[str, dict[int, list[bytes]]]) -> None:
    url, _ = bucket
    for partition in plan_partitions({"path": url, "driver.fsync": "false"}):
        assert pickle.loads(pickle.dumps(partition)) == partition


def test_objects_pulsar_wrote(spark: Any, tmp_path: Path) -> None:
    driver_url = f"file://{tmp_path}"
    driver = open_driver(driver_url)
    version = {v1.FORMAT_VERSION_KEY: "1"}
    uid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    for vector in load_vectors():
        driver.write(v1.data_key(uid, vector.ledger_id), vector.data, metadata=version)
        driver.write(v1.index_key(uid, vector.ledger_id), vector.index, metadata=version)
    rows = spark.read.format("pulsar-offload").option("decode", "none").load(driver_url).collect()
    for vector in load_vectors():
        got = sorted((r.entry_id, bytes(r.payload)) for r in rows if r.ledger_id == vector.ledger_id)
        assert got == list(enumerate(vector.entries))


def test_missing_path_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="needs a store URL"):
        plan_partitions({})


@pytest.mark.emulator
def test_executors_read_from_s3(spark: Any, s3: MotoS3) -> None:
    options = s3.client_options()
    offloader = open_offloader("s3://offload-test/ledgers", **options, max_block_size=5 * 2**20)
    entries = [bytes([n % 251]) * (n * 997 % 60_000) for n in range(400)]
    offloader.offload(InMemoryReadHandle(77, entries), uuid.uuid4())
    reader = spark.read.format("pulsar-offload").option("blocksPerPartition", "1").option("decode", "none")
    for name, value in options.items():
        reader = reader.option(f"driver.{name}", value)
    rows = sorted((r.entry_id, bytes(r.payload)) for r in reader.load("s3://offload-test/ledgers").collect())
    assert rows == list(enumerate(entries))


def test_filters_on_ledger_and_entry_prune_what_is_read(spark: Any, bucket: tuple[str, dict[int, list[bytes]]]) -> None:
    url, ledgers = bucket
    query = "ledger_id = 4 AND entry_id >= 10 AND entry_id < 40"

    def scan(pushdown: str) -> tuple[int, list[tuple[int, int, bytes]]]:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", pushdown)
        try:
            frame = spark.read.format("pulsar-offload").options(decode="none", blocksPerPartition="1")
            frame = frame.option("filterPushdown", pushdown)
            filtered = frame.load(url).where(query)
            rows = sorted((r.ledger_id, r.entry_id, bytes(r.payload)) for r in filtered.collect())
            return filtered.rdd.getNumPartitions(), rows
        finally:
            spark.conf.unset("spark.sql.python.filterPushdown.enabled")

    all_partitions, unpruned = scan("false")
    few_partitions, pruned = scan("true")
    expected = [(4, entry_id, ledgers[4][entry_id]) for entry_id in range(10, 40)]
    assert pruned == unpruned == expected
    assert few_partitions < all_partitions / 5
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        odd = spark.read.format("pulsar-offload").options(decode="none", filterPushdown="true").load(url)
        picked = odd.where("ledger_id IN (3, 99) AND entry_id = 7 AND NOT (entry_id = 8)").collect()
        assert [(r.ledger_id, r.entry_id) for r in picked] == [(3, 7)]
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")


def test_pushdown_without_the_session_setting_says_what_to_set(
    spark: Any, bucket: tuple[str, dict[int, list[bytes]]]
) -> None:
    url, _ = bucket
    frame = spark.read.format("pulsar-offload").option("filterPushdown", "true").load(url)
    with pytest.raises(Exception, match="spark.sql.python.filterPushdown.enabled"):
        frame.where("ledger_id = 4").collect()


@pytest.mark.parametrize("options", [{"decode": "none"}, {"decode": "auto"}, {"decode": "none", "arrow": "false"}])
def test_a_schema_of_some_columns_builds_only_those(
    spark: Any, bucket: tuple[str, dict[int, list[bytes]]], options: dict[str, str]
) -> None:
    url, ledgers = bucket
    frame = spark.read.format("pulsar-offload").schema("payload binary, entry_id long").options(**options).load(url)
    assert frame.columns == ["payload", "entry_id"]
    got = sorted((r.entry_id, bytes(r.payload)) for r in frame.where("entry_id < 5").collect())
    assert got == sorted((e, entries[e]) for entries in ledgers.values() for e in range(5))


def test_a_schema_naming_an_unknown_column_is_refused(spark: Any, bucket: tuple[str, dict[int, list[bytes]]]) -> None:
    url, _ = bucket
    frame = spark.read.format("pulsar-offload").schema("entry_id long, offset long").load(url)
    with pytest.raises(Exception, match="pulsar-offload has no column 'offset'"):
        frame.collect()


FRESH_SESSION = """
import sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
frame = spark.read.format("pulsar-offload").option("decode", "none").load(sys.argv[1])
print("ROWS", frame.count())
kafka = spark.read.format("kafka-remote").option("topic", "no-such-topic").load(sys.argv[1])
print("KAFKA", kafka.count(), len(kafka.columns))
print("EMPTY", spark.read.format("pulsar-offload").load(sys.argv[2]).count())
"""


def test_a_fresh_session_finds_the_source_without_registering_it(
    bucket: tuple[str, dict[int, list[bytes]]], tmp_path: Path
) -> None:
    url, ledgers = bucket
    environment = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    (tmp_path / "empty").mkdir()
    result = subprocess.run([sys.executable, "-c", FRESH_SESSION, url, f"file://{tmp_path / 'empty'}"],
                            capture_output=True, text=True,
                            cwd=tmp_path, env=environment, timeout=300)  # fmt: skip
    assert f"ROWS {sum(map(len, ledgers.values()))}" in result.stdout, result.stdout[-2000:] + result.stderr[-3000:]
    assert "KAFKA 0 7" in result.stdout  # kafka-remote found the same way (pyspark_kafka_remote), no headers column
    assert "EMPTY 0" in result.stdout  # a store with nothing to read is an empty frame, not an error


def test_partitions_hold_consecutive_blocks_up_to_the_byte_budget(bucket: tuple[str, dict[int, list[bytes]]]) -> None:
    url, _ = bucket
    for budget in (8192, 3 * 8192):  # every ledger is larger: cut into block ranges on the driver
        plan = plan_partitions({"path": url, "bytesPerPartition": str(budget)})
        for partition in plan:
            assert isinstance(partition, BlockRangePartition)
            spans = [end - offset for offset, end, _ in partition.blocks]
            assert sum(spans) <= budget or len(spans) == 1
            assert all(b[1] == c[0] for b, c in zip(partition.blocks, partition.blocks[1:], strict=False))
        assert len({p.ledger_id for p in plan}) == 3
    whole = plan_partitions({"path": url})  # 128 MiB: the small ledgers packed into one task
    assert [type(p) for p in whole] == [LedgerGroupPartition] and len(whole[0].data_keys) == 3
    tasks = block_partitions(url, whole)  # which reads each ledger's blocks whole
    assert sorted(p.ledger_id for p in tasks) == sorted({p.ledger_id for p in plan})
    assert all(b[1] == c[0] for p in tasks for b, c in zip(p.blocks, p.blocks[1:], strict=False))
