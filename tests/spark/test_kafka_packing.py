"""kafka-remote packs consecutive small segments of one topic-partition into
one Spark partition (issue 42 item 5): few tasks and a small plan for a
store of many small segments, read as the unpacked plan reads."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path
from typing import Any

import pytest

from offload_core.errors import NotFoundError
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.rsm.layout import LOG_SUFFIX, MANIFEST_SUFFIX, SegmentManifest, encode_manifest, segment_key
from offload_core.rsm.types import (
    RemoteLogIndexEntry,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
    TopicPartition,
)
from offload_core.spark.kafka_partition import RANGE_BYTES
from offload_core.spark.kafka_remote import plan_partitions, read_partition
from offload_core.spark.read_options import OPEN_COST_BYTES
from offload_core.spark.store_tasks import Store
from tests.rsm.segments import TOPIC_ID, numbered_segments, write_partition

DEFAULT_BYTES = 128 * 1024 * 1024


def _copied(tmp_path: Path, counts: dict[str, int]) -> str:
    """A store of ``counts`` segments of 100 offsets per partition directory name."""
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url, fsync="false"))
    for name, count in counts.items():
        tp, segments = read_partition_dir(write_partition(tmp_path, name, numbered_segments(count)))
        for segment in segments:
            rsm.copy_log_segment(tp, segment.data)
    return url


def _rows(url: str, plan: list[Any]) -> list[tuple[Any, ...]]:
    store = Store.of(url)
    return [row for partition in plan for row in read_partition(store, partition)]


def test_small_segments_of_a_partition_pack_into_few_partitions_read_as_unpacked(tmp_path: Path) -> None:
    url = _copied(tmp_path, {"orders-0": 40, "orders-1": 2})
    options = {"url": url, "subscribe": "orders"}
    packed = plan_partitions(options)
    # Each segment (some 32 KB) costs its bytes and the 4 MiB open cost: 31 fit in 128 MiB. Never two
    # topic-partitions in one partition.
    assert DEFAULT_BYTES // (OPEN_COST_BYTES + 64 * 1024) == 31
    assert [(p.partition, len(p.ranges)) for p in packed] == [(0, 31), (0, 9), (1, 2)]
    unpacked = plan_partitions({**options, "bytesPerPartition": "1"})  # one partition per segment, as before
    assert all(len(p.ranges) == 1 for p in unpacked) and len(unpacked) == 42
    rows = _rows(url, packed)
    assert rows == _rows(url, unpacked)
    assert [(row[3], row[4]) for row in rows] == [(0, o) for o in range(4000)] + [(1, o) for o in range(200)]

    three = plan_partitions({**options, "bytesPerPartition": str(3 * (OPEN_COST_BYTES + 64 * 1024))})
    assert [len(p.ranges) for p in three] == [3] * 13 + [1, 2]
    capped = plan_partitions({**options, "maxRecordsPerPartition": "250"})
    assert [len(p.ranges) for p in capped] == [2] * 21 and all(p.offset_count <= 250 for p in capped)
    assert _rows(url, three) == rows and _rows(url, capped) == rows

    split = plan_partitions({**options, "minPartitions": "60"})
    assert len(split) >= 60 and _rows(url, split) == rows


def _manifests_only(root: Path, count: int, log_bytes: int) -> None:
    """``count`` segment manifests of orders-0 of 100 offsets each, as the
    filesystem driver leaves committed writes (planning reads only these)."""
    tp = TopicIdPartition(TOPIC_ID, TopicPartition("orders", 0))
    for number in range(count):
        base = number * 100
        segment_id = RemoteLogSegmentId.generate(tp)
        meta = RemoteLogSegmentMetadata(segment_id, start_offset=base, end_offset=base + 99,
                                        max_timestamp_ms=1_700_000_000_000 + base, broker_id=0,
                                        event_timestamp_ms=1_700_000_000_000 + number,
                                        segment_size_in_bytes=log_bytes, segment_leader_epochs={0: base},
                                        state=RemoteLogSegmentState.COPY_SEGMENT_FINISHED)  # fmt: skip
        entry = RemoteLogIndexEntry(segment_id, base, base, base + 99, 0, 0, 0, log_bytes)
        path = root / segment_key("", segment_id, base, MANIFEST_SUFFIX)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode_manifest(SegmentManifest(meta, {LOG_SUFFIX: log_bytes, "index": 0}, (entry,))))


def test_the_plan_of_many_small_segments_pickles_to_under_80_bytes_a_segment(tmp_path: Path) -> None:
    """Spark pickles each partition on its own. A range packs into 58
    bytes; a partition's own fields (its class, topic-partition, prefix,
    options) some 400 more, shared by the 31 segments 128 MiB holds at a 4
    MiB open cost each: under 80 bytes a segment (one partition per segment,
    with its key string and fields, pickled to over 300)."""
    count = 10_000
    _manifests_only(tmp_path / "store", count, log_bytes=2000)
    planned = plan_partitions({"url": f"file://{tmp_path / 'store'}", "subscribe": "orders"})
    assert RANGE_BYTES == 58
    assert sum(len(p.ranges) for p in planned) == count and len(planned) == -(-count // 31)
    assert sum(len(pickle.dumps(p)) for p in planned) / count < 80


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_segment_vanished_inside_a_packed_partition(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, fail_on_data_loss: str
) -> None:
    url = _copied(tmp_path, {"orders-0": 3})
    (packed,) = plan_partitions({"url": url, "topic": "orders", "failOnDataLoss": fail_on_data_loss})
    lost = packed.log_key(packed.ranges[1])
    (tmp_path / "store" / lost).unlink()
    rows: list[tuple[Any, ...]] = []
    if fail_on_data_loss == "true":
        with pytest.raises(NotFoundError, match=f"{lost} .offsets 100 to 199. vanished .*failOnDataLoss=false"):
            rows.extend(read_partition(Store.of(url), packed))
        assert [row[4] for row in rows] == list(range(100))  # the segment before it was read
        return
    with caplog.at_level(logging.WARNING, logger="offload_core.spark.data_loss"):
        rows.extend(read_partition(Store.of(url), packed))
    assert [row[4] for row in rows] == [*range(100), *range(200, 300)]  # the segments around it are still read
    (record,) = caplog.records
    assert record.context["key"] == lost
    assert (record.context["first_offset"], record.context["last_offset"]) == ("100", "199")


def test_a_large_segment_is_cut_into_runs_of_its_index_entries(tmp_path: Path) -> None:
    """A segment of 20 batches of 5 offsets, one index entry a batch: cut
    into runs of whole entries within ``bytesPerPartition`` (3 of about 1.7
    KB in 3.5 entries' bytes) and ``maxRecordsPerPartition`` (2 entries of 5
    offsets within 12), each run its own partition at these budgets."""
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url, fsync="false"), index_entry_bytes=1)
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    entries = rsm.copy_log_segment(tp, segment.data)
    assert len(entries) == 20
    entry_bytes = sum(e.length for e in entries) // len(entries)
    options = {"url": url, "topic": "orders"}
    every = [(0, o) for o in range(100)]

    by_bytes = plan_partitions({**options, "bytesPerPartition": str(entry_bytes * 7 // 2)})
    assert [[r.end - r.first for r in p.ranges] for p in by_bytes] == [[15]] * 6 + [[10]]
    assert [row[3:5] for row in _rows(url, by_bytes)] == every
    by_offsets = plan_partitions({**options, "maxRecordsPerPartition": "12"})
    assert [[r.end - r.first for r in p.ranges] for p in by_offsets] == [[10]] * 10
    assert [row[3:5] for row in _rows(url, by_offsets)] == every
