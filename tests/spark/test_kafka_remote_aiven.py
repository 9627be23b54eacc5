"""``kafka-remote`` with ``layout aiven``: the shared runs' segment, tiered
by Aiven's plugin, gives the same rows as our own layout's copy of it,
from the broker's properties file or ``rsm.config.*`` options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark.kafka_partition import SegmentRange, SegmentRangePartition
from offload_core.spark.kafka_remote import make_reader, plan_partitions, read_partition
from tests.aiven_vectors import FILESYSTEM_BACKEND, AivenRun, aiven_runs, run_root, server_properties
from tests.kafka_vectors import kafka_cases
from tests.rsm.aiven.stores import TOPIC_ID
from tests.rsm.segments import fixture_partition

pytestmark = pytest.mark.spark
RUNS = aiven_runs()
CASE = next(case for case in kafka_cases() if case.name == "a-uncompressed")


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("ours")
    url = f"file://{root / 'store'}"
    tp, segments = read_partition_dir(fixture_partition(CASE, root, TOPIC_ID))
    rsm = RemoteStorageManager(open_driver(url))
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    return url


def rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in frame.collect()), key=lambda row: (row[3], row[4]))


def only_range(partition: SegmentRangePartition) -> SegmentRange:
    (segment,) = partition.ranges
    return segment


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_the_plugins_segment_reads_as_our_copy_of_it(spark: Any, ours: str, run: AivenRun, tmp_path: Path) -> None:
    config = server_properties(tmp_path / "server.properties", run)
    options = {"topic": "oracle-a", "bytesPerPartition": "4096"}
    frame = spark.read.format("kafka-remote").option("layout", "aiven").option("config", str(config))
    expected = rows(spark.read.format("kafka-remote").option("url", ours).options(**options).load())
    assert len(expected) == 52
    assert rows(frame.options(**options).load()) == expected
    ranged = {"startingOffsets": '{"oracle-a": {"0": 17}}', "endingOffsets": '{"oracle-a": {"0": 40}}'}
    assert rows(frame.options(**options, **ranged).load()) == [r for r in expected if 17 <= r[4] < 40]
    planned = plan_partitions({"layout": "aiven", "config": str(config), **options})
    assert len(planned) > 1  # several ranges of the segment, cut at batches its offset index names
    spans = [only_range(p) for p in planned]  # an Aiven segment's range is never packed with another
    assert all(a.stop == b.start for a, b in zip(spans, spans[1:], strict=False))


def test_rsm_config_options_stand_for_the_file(spark: Any, ours: str) -> None:
    run = RUNS[1]
    frame = (
        spark.read.format("kafka-remote")
        .option("layout", "aiven")
        .option("rsm.config.storage.backend.class", FILESYSTEM_BACKEND)
        .option("rsm.config.storage.root", str(run_root(run)))
        .option("topic", "oracle-a")
        .load()
    )
    assert rows(frame) == rows(spark.read.format("kafka-remote").option("url", ours).option("topic", "oracle-a").load())


def test_an_encrypted_run_without_keys_names_the_key_pair(spark: Any) -> None:
    run = RUNS[2]
    frame = spark.read.format("kafka-remote").option("layout", "aiven").option("url", f"file://{run_root(run)}")
    with pytest.raises(Exception, match="oracle-key-1"):
        frame.option("topic", "oracle-a").load().collect()


def test_max_records_per_partition_shares_each_byte_ranges_own_offsets(tmp_path: Path) -> None:
    config = server_properties(tmp_path / "server.properties", RUNS[0])
    options = {"layout": "aiven", "config": str(config), "topic": "oracle-a", "bytesPerPartition": "4096"}
    ranges = {only_range(p)[2:4] for p in plan_partitions(options)}
    planned = plan_partitions({**options, "maxRecordsPerPartition": "5"})
    assert {only_range(p)[2:4] for p in planned} == ranges and len(ranges) > 2
    assert all(only_range(p).end - only_range(p).first <= 5 for p in planned)
    # Each range's shares span its own offsets (and the few before its first indexed batch), not all 52 of
    # the segment's: a range is not fetched and decrypted once per share of the whole segment.
    assert len(planned) < 2 * (len(ranges) + 52 // 5)
    store = make_reader(options).store
    offsets = sorted(row[4] for partition in planned for row in read_partition(store, partition))
    assert offsets == list(range(52))
