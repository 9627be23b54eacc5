"""Topic ids, as Kafka keeps them: a remote segment belongs to (topic id,
partition), a topic deleted and recreated under its name is another
topic, Kafka's partition.metadata names the id, and objects written before
ids were kept read as the unknown id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offload_core.errors import ConfigError, FormatError
from offload_core.plugins import open_driver
from offload_core.rsm import (
    RemoteLogMetadataManager,
    RemoteLogSegmentId,
    RemoteStorageManager,
    TopicIdPartition,
    TopicPartition,
    list_partitions,
    read_partition_dir,
)
from offload_core.rsm.log_reader import RemoteLogReader
from offload_core.rsm.partition_dir import parse_partition_metadata
from offload_core.rsm.remote_log import resolve_partition
from offload_core.rsm.types import UNKNOWN_TOPIC_ID
from tests.rsm.segments import TOPIC_ID, SegmentSpec, numbered_segments, plain_batch, write_partition

REBORN = "tvHCaSDsQZWsjr5rbtCjxA"  # the id of the topic created again under the same name


def test_partition_metadata_is_read_as_kafka_reads_it() -> None:
    assert parse_partition_metadata(f"version: 0\ntopic_id: {TOPIC_ID}", "p") == TOPIC_ID
    assert parse_partition_metadata(f"version: 0\ntopic_id: {TOPIC_ID}\n", "p") == TOPIC_ID
    for bad in ("", "version: 0\n", f"version 0\ntopic_id: {TOPIC_ID}", f"version: -1\ntopic_id: {TOPIC_ID}",
                "version: 0\ntopic_id: not-a-uuid", f"version: 0\ntopic_id: {TOPIC_ID}\nmore: 1"):  # fmt: skip
        with pytest.raises(FormatError, match="not a Kafka partition.metadata file"):
            parse_partition_metadata(bad, "orders-0/partition.metadata")
    with pytest.raises(FormatError, match="zero topic id"):
        parse_partition_metadata(f"version: 0\ntopic_id: {UNKNOWN_TOPIC_ID}", "p")


def test_directory_names_carry_the_topic_id_and_read_back() -> None:
    tp = TopicPartition("my-topic-7", 3)
    known = TopicIdPartition(TOPIC_ID, tp)
    assert known.directory_name == f"my-topic-7-3-{TOPIC_ID}"
    assert TopicIdPartition.parse_directory(known.directory_name) == known
    legacy = TopicIdPartition.parse_directory("my-topic-7-3")
    assert legacy == TopicIdPartition(UNKNOWN_TOPIC_ID, tp) and not legacy.known
    assert legacy.directory_name == "my-topic-7-3"
    with pytest.raises(ConfigError, match="not a Kafka Uuid"):
        TopicIdPartition("short", tp)
    assert RemoteLogSegmentId.generate(known).topic_partition == tp


def test_a_directory_needs_its_partition_metadata_or_a_given_id(tmp_path: Path) -> None:
    bare = write_partition(tmp_path, "orders-0", numbered_segments(1), topic_id=None)
    with pytest.raises(ConfigError, match=r"no partition.metadata .*--topic-id"):
        read_partition_dir(bare)
    assert read_partition_dir(bare, REBORN)[0] == TopicIdPartition(REBORN, TopicPartition("orders", 0))
    named = write_partition(tmp_path / "b", "orders-0", numbered_segments(1))
    assert read_partition_dir(named)[0].topic_id == TOPIC_ID
    assert read_partition_dir(named, REBORN)[0].topic_id == REBORN  # a given id wins


def incarnations(
    tmp_path: Path, rlmm: RemoteLogMetadataManager | None = None
) -> tuple[RemoteStorageManager, TopicIdPartition, TopicIdPartition]:
    """orders-0 copied, deleted and created again: 100 records, then 20 others."""
    rsm = RemoteStorageManager(open_driver(f"file://{tmp_path / 'store'}"), prefix="tiered", metadata_manager=rlmm)
    first_tp, (first,) = read_partition_dir(write_partition(tmp_path / "1", "orders-0", numbered_segments(1)))
    reborn = [SegmentSpec([plain_batch(0, 20, timestamp=1_800_000_000_000, size=10)])]
    second_tp, (second,) = read_partition_dir(write_partition(tmp_path / "2", "orders-0", reborn, topic_id=REBORN))
    rsm.copy_log_segment(first_tp, first.data)
    rsm.copy_log_segment(second_tp, second.data)
    return rsm, first_tp, second_tp


def test_a_recreated_topic_is_another_topic_in_listings_and_reads(tmp_path: Path) -> None:
    rsm, first, second = incarnations(tmp_path)
    assert list_partitions(rsm.driver, "tiered") == sorted([first, second])
    assert [s.end_offset for s in rsm.list_remote_segments(first)] == [99]
    assert [s.end_offset for s in rsm.list_remote_segments(second)] == [19]
    assert [r.record.offset for r in RemoteLogReader(rsm, second).records(0)] == list(range(20))
    assert {r.record.timestamp // 10**9 for r in RemoteLogReader(rsm, second).records(0)} == {1_800}
    tp = TopicPartition("orders", 0)
    with pytest.raises(ConfigError, match=rf"orders-0 has 2 topic ids in the store \(.*{REBORN}.*\).*--topic-id"):
        resolve_partition(rsm.driver, "tiered", tp, None, option="--topic-id")
    assert resolve_partition(rsm.driver, "tiered", tp, REBORN, option="--topic-id") == second
    rsm.delete_topic_partition(first)
    assert resolve_partition(rsm.driver, "tiered", tp, None, option="--topic-id") == second
    assert [s.end_offset for s in rsm.list_remote_segments(second)] == [19]


def test_the_metadata_manager_keeps_incarnations_apart(tmp_path: Path) -> None:
    with RemoteLogMetadataManager(tmp_path / "rlmm.sqlite") as rlmm:
        _, first, second = incarnations(tmp_path, rlmm)
        for tp, count in ((first, 100), (second, 20)):
            (recorded,) = rlmm.list_remote_log_segments(tp)
            assert recorded.end_offset == count - 1 and recorded.topic_id_partition == tp
            assert rlmm.remote_log_segment_metadata(tp, 0, 10) == recorded


def test_objects_written_before_topic_ids_read_as_the_unknown_id(tmp_path: Path) -> None:
    rsm, first, _ = incarnations(tmp_path)
    root = tmp_path / "store" / "tiered"
    legacy = root / "orders-0"
    (root / first.directory_name).rename(legacy)
    for manifest in legacy.glob("*.rsm-manifest"):
        body = json.loads(manifest.read_bytes())
        del body["topic_id"]  # manifests had no topic id then
        manifest.write_text(json.dumps(body))
    unknown = TopicIdPartition(UNKNOWN_TOPIC_ID, TopicPartition("orders", 0))
    assert unknown in list_partitions(rsm.driver, "tiered")
    old = resolve_partition(rsm.driver, "tiered", unknown.topic_partition, "unknown", option="--topic-id")
    fresh = RemoteStorageManager(rsm.driver, prefix="tiered")
    assert old == unknown and [r.record.offset for r in RemoteLogReader(fresh, old).records(0)] == list(range(100))
