"""kafka-remote's read_committed over packed tasks, where a transaction's
records are in one segment and its ABORT marker (and the ``.txnindex``
entry naming it) in a later one: the later segment in the same packed
partition, or in another partition. As a Kafka read_committed consumer
(KIP-98), records of a producer's aborted transaction are dropped,
however the segments are cut into partitions, and control records are
never rows; read_uncommitted keeps every data record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from offload_core.errors import FormatError, NotFoundError
from offload_core.formats import kafka
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteLogMetadataManager, RemoteStorageManager, read_partition_dir
from offload_core.rsm.log_reader import Isolation, RemoteLogReader
from offload_core.rsm.types import TopicIdPartition, TopicPartition
from offload_core.spark.kafka_remote import plan_partitions, read_partition
from offload_core.spark.store_tasks import Store
from tests.rsm.segments import TOPIC_ID, aborted_across_segments, write_partition

COMMITTED = "read_committed"
# What aborted_across_segments gives each isolation level: markers 9, 14 and 17 never;
# producer 77's records (2-4, 10-11, ABORT at 17) and 99's (12-13, ABORT at 14) not read_committed.
EVERY = [*range(9), 10, 11, 12, 13, 15, 16, 18, 19]
KEPT = [0, 1, 5, 6, 7, 8, 15, 16, 18, 19]
ABORTED_77 = kafka.AbortedTxn(77, 2, 17, 18)  # in the third segment's .txnindex only
ABORTED_99 = kafka.AbortedTxn(99, 12, 14, 2)


@pytest.fixture
def store(tmp_path: Path) -> str:
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url, fsync="false"))
    tp, segments = read_partition_dir(write_partition(tmp_path, "txn-0", aborted_across_segments()))
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    return url


def _offsets(url: str, plan: list[Any]) -> list[int]:
    store = Store.of(url)
    return [row[4] for partition in plan for row in read_partition(store, partition)]


def _options(url: str, isolation: str = COMMITTED, **more: str) -> dict[str, str]:
    return {"url": url, "topic": "txn", "kafka.isolation.level": isolation, **more}


def test_the_fixture_reads_as_the_consumer_reader_reads_it(store: str) -> None:
    """The offsets above are what the CLI's reader (Kafka's fetch rules) gives."""
    tp = TopicIdPartition(TOPIC_ID, TopicPartition("txn", 0))
    reader = RemoteLogReader(RemoteStorageManager(open_driver(store)), tp)
    assert [(s.start_offset, s.end_offset) for s in reader.segments] == [(0, 8), (9, 16), (17, 19)]
    assert [r.record.offset for r in reader.records(0)] == EVERY
    assert [r.record.offset for r in reader.records(0, isolation=Isolation.READ_COMMITTED)] == KEPT


def test_an_abort_in_a_later_segment_of_the_same_packed_partition(store: str) -> None:
    (packed,) = plan_partitions(_options(store))
    assert [(r.first, r.end) for r in packed.ranges] == [(0, 9), (9, 17), (17, 20)]
    assert set(packed.aborted) == {ABORTED_77, ABORTED_99}
    assert _offsets(store, [packed]) == KEPT
    (uncommitted,) = plan_partitions(_options(store, "read_uncommitted"))
    assert uncommitted.aborted == () and _offsets(store, [uncommitted]) == EVERY


@pytest.mark.parametrize(
    ("cut", "partitions"),
    [({"bytesPerPartition": "1"}, 3), ({"maxRecordsPerPartition": "3"}, 7), ({"minPartitions": "9"}, 9)],
    ids=["bytesPerPartition", "maxRecordsPerPartition", "minPartitions"],
)
def test_an_abort_in_a_later_partition(store: str, cut: dict[str, str], partitions: int) -> None:
    plan = plan_partitions(_options(store, **cut))
    assert len(plan) == partitions and all(len(p.ranges) == 1 for p in plan)
    # The partitions of the first segment hold no marker, yet know 77's transaction from the third's index.
    first_segment = [p for p in plan if p.ranges[0].end <= 9]
    assert first_segment and all(ABORTED_77 in p.aborted for p in first_segment)
    assert _offsets(store, plan) == KEPT
    assert _offsets(store, plan_partitions(_options(store, "read_uncommitted", **cut))) == EVERY


@pytest.mark.parametrize("cut", [{}, {"bytesPerPartition": "1"}, {"maxRecordsPerPartition": "2"}],
                         ids=["packed", "bytesPerPartition", "maxRecordsPerPartition"])  # fmt: skip
def test_every_offset_range_reads_as_kafka_does(store: str, cut: dict[str, str]) -> None:
    """Starting and ending anywhere (in a transaction, at a marker, before
    the segment holding the ABORT): read_committed keeps exactly the
    committed offsets of the range."""
    for first in range(20):
        for end in range(first + 1, 21):
            bounds = {"startingOffsets": json.dumps({"txn": {"0": first}}),
                      "endingOffsets": json.dumps({"txn": {"0": end}}) if end < 20 else "latest"}  # fmt: skip
            got = _offsets(store, plan_partitions(_options(store, **bounds, **cut)))
            assert got == [o for o in KEPT if first <= o < end], (first, end)


@pytest.mark.spark
def test_spark_reads_committed_records_packed_or_not(spark: Any, store: str) -> None:
    def offsets(isolation: str, **more: str) -> list[int]:
        frame = spark.read.format("kafka-remote").options(**_options(store, isolation, **more)).load()
        return [row.offset for row in frame.select("offset").orderBy("offset").collect()]

    assert offsets("read_uncommitted") == EVERY
    assert offsets(COMMITTED) == KEPT  # one task, the three segments packed
    assert offsets(COMMITTED, bytesPerPartition="1") == KEPT  # a task per segment


def test_a_later_segments_vanished_transaction_index_is_refused(store: str, tmp_path: Path) -> None:
    """The third segment's ``.txnindex`` (the only one naming 77's
    transaction) deleted while its manifest still records it: read_committed
    refuses, naming it, where it took the missing index for "no aborted
    transactions" and gave 77's records 2-4 and 10-11 as committed.
    read_uncommitted, which reads no transaction index, is unchanged."""
    index = max((tmp_path / "store").rglob("*.txnindex"))  # the third segment's: its base offset is the greatest
    index.unlink()
    key = str(index.relative_to(tmp_path / "store"))
    with pytest.raises(FormatError, match=f"{key} is gone but its segment's manifest recorded 34 bytes"):
        plan_partitions(_options(store))
    reader = RemoteLogReader(
        RemoteStorageManager(open_driver(store)), TopicIdPartition(TOPIC_ID, TopicPartition("txn", 0))
    )
    with pytest.raises(FormatError, match=f"{key} is gone"):
        list(reader.records(0, isolation=Isolation.READ_COMMITTED))
    assert _offsets(store, plan_partitions(_options(store, "read_uncommitted"))) == EVERY


def test_a_later_segment_gone_while_the_metadata_manager_lists_it_is_not_read_as_no_aborts(tmp_path: Path) -> None:
    """The metadata manager, not the store, says which segments there are
    (a broker's view): the third segment, the only one naming 77's aborted
    transaction, deleted from the store while still listed. The first
    segment's aborted transactions are refused, naming it, where the
    missing segment was taken for "no aborted transactions" (none: 77's
    records 2-4 read as committed)."""
    url = f"file://{tmp_path / 'store'}"
    with RemoteLogMetadataManager(tmp_path / "rlmm.sqlite") as rlmm:
        rsm = RemoteStorageManager(open_driver(url, fsync="false"), metadata_manager=rlmm)
        tp, segments = read_partition_dir(write_partition(tmp_path, "txn-0", aborted_across_segments()))
        for segment in segments:
            rsm.copy_log_segment(tp, segment.data)
        third = RemoteLogReader(rsm, tp).segments[2]
        for info in list(rsm.driver.list("")):
            if third.segment_id.id in info.key:
                rsm.driver.delete(info.key)
        # A new process's manager, as a Spark plan's: it has read no manifest yet.
        reader = RemoteLogReader(RemoteStorageManager(open_driver(url), metadata_manager=rlmm), tp)
        # What kafka-remote's planning asks of each segment it reads under read_committed.
        with pytest.raises(NotFoundError, match=rf"segment {third.segment_id.id} .* is not in the store"):
            reader.aborted_transactions(reader.segments[0])
