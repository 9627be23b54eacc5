"""Overlapping remote segments, as leader changes leave them: each offset is
served by one segment, as Kafka's RemoteLogLeaderEpochState decides, in the
metadata manager, the store-only listings and every reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.formats import kafka
from offload_core.plugins import open_driver
from offload_core.rsm import (
    RemoteLogMetadataManager,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemoteStorageManager,
    TopicIdPartition,
    TopicPartition,
    read_partition_dir,
)
from offload_core.rsm.epoch_state import epoch_states, served_ranges
from offload_core.rsm.log_reader import RemoteLogReader
from offload_core.rsm.remote_log import list_partition
from tests.kafka_vectors import kafka_cases
from tests.rsm.segments import TOPIC_ID, SegmentSpec, fixture_partition, overlapping_copies, write_partition

S = RemoteLogSegmentState
CASE = kafka_cases()[0]  # offsets 0..51; its batch 6 starts at offset 20
TP = TopicIdPartition(TOPIC_ID, TopicPartition(CASE.spec["topic"], CASE.spec["partition"]))
EXPECTED = [(r["offset"], r["timestamp"], r["key"], r["value"]) for b in CASE.spec["batches"] for r in b["records"]]


def meta(start: int, end: int, epochs: dict[int, int], state: RemoteLogSegmentState = S.COPY_SEGMENT_FINISHED):
    return RemoteLogSegmentMetadata(RemoteLogSegmentId.generate(TP), start, end, 0, 0, 0, 1, epochs, state)


def serving(*segments: RemoteLogSegmentMetadata) -> list[tuple[int, int, int]]:
    """``(segment number, first, last)`` of the ranges, for ``segments`` finished in this order."""
    numbers = {s.segment_id: n for n, s in enumerate(segments)}
    ranges = served_ranges(epoch_states(segments), {s.segment_id: s for s in segments})
    return [(numbers[r.segment.segment_id], r.first, r.last) for r in ranges]


def test_kafkas_duplicate_and_overlap_cases() -> None:
    # RemoteLogLeaderEpochState's case 1: L1's 0-200 makes L0's 0-100 unreferenced.
    assert serving(meta(0, 100, {0: 0}), meta(0, 200, {0: 0})) == [(1, 0, 200)]
    # Its case 2: L0's 10-90, then L1's 5-100 and 101-200: 95 comes from 5-100.
    assert serving(meta(10, 90, {0: 10}), meta(5, 100, {0: 5}), meta(101, 200, {0: 101})) == [
        (1, 5, 100),
        (2, 101, 200),
    ]
    # A copy reaching less far than the epoch already does displaces nothing: it serves up to the next.
    assert serving(meta(0, 100, {0: 0}), meta(50, 60, {0: 50})) == [(0, 0, 49), (1, 50, 60)]
    # A later epoch truncates the earlier where it starts (the leader-epoch lineage), whatever the order.
    old, new = meta(0, 51, {0: 0}), meta(20, 51, {1: 20})
    assert serving(old, new) == [(0, 0, 19), (1, 20, 51)]
    assert serving(new, old) == [(1, 0, 19), (0, 20, 51)]
    # One segment across epochs is one range; still-copying and being-deleted copies serve nothing.
    assert serving(meta(0, 99, {0: 0, 1: 40}), meta(100, 149, {1: 100})) == [(0, 0, 99), (1, 100, 149)]
    states = epoch_states([meta(0, 9, {0: 0}, S.DELETE_SEGMENT_STARTED)], [meta(0, 9, {0: 0}, S.COPY_SEGMENT_STARTED)])
    assert states[0].offset_to_id == {} and len(states[0].unreferenced) == 2


@pytest.fixture
def copies(tmp_path: Path) -> tuple[Path, Path, int]:
    return overlapping_copies(CASE, tmp_path)


def copy_both(rsm: RemoteStorageManager, old: Path, new: Path) -> tuple[RemoteLogSegmentMetadata, ...]:
    for directory in (old, new):
        tp, (segment,) = read_partition_dir(directory)
        rsm.copy_log_segment(tp, segment.data)
    return tuple(rsm.list_remote_segments(TP))


@pytest.mark.parametrize("with_rlmm", [False, True], ids=["store", "rlmm"])
def test_every_offset_is_read_once_through_the_reader_and_the_seed_read(tmp_path, copies, with_rlmm) -> None:
    old, new, cut = copies
    rlmm = RemoteLogMetadataManager(tmp_path / "rlmm.sqlite") if with_rlmm else None
    rsm = RemoteStorageManager(open_driver(f"file://{tmp_path / 'store'}"), prefix="t", metadata_manager=rlmm)
    first, second = copy_both(rsm, old, new)
    assert (first.start_offset, second.start_offset, dict(second.segment_leader_epochs)) == (0, cut, {1: cut})
    reader = RemoteLogReader(rsm, TP)
    records = [r.record for r in reader.records(0)]
    assert [(r.offset, r.timestamp) for r in records] == [(o, t) for o, t, *_ in EXPECTED]
    assert [r.leader_epoch for r in reader.records(0)] == [0] * cut + [1] * (52 - cut)
    assert [r.record.offset for r in reader.records(30)] == list(range(30, 52))
    assert (reader.log_start_offset, reader.log_end_offset) == (0, 52)
    # The seed interface: the segments' index entries, read one by one, give each offset once.
    offsets = []
    for segment in rsm.list_remote_segments(TP):
        for entry in rsm.get_remote_log_index_entries(segment):
            data = rsm.read(entry, 10**9, 0, True)
            batches = [data[b.position : b.position + b.size_in_bytes] for b in kafka.iter_batches(data)]
            offsets += [r.offset for batch in batches for r in kafka.iter_records(batch)]
    assert offsets == list(range(52))
    if rlmm is not None:
        assert rlmm.remote_log_segment_metadata(TP, 0, 19) == first
        assert rlmm.remote_log_segment_metadata(TP, 1, 20) == second
        assert rlmm.remote_log_segment_metadata(TP, 0, 20) == first  # epoch 0 held offset 20 in the old copy
        rlmm.close()


def test_an_unreferenced_copy_is_skipped_and_expires_with_retention(tmp_path) -> None:
    batches = list(kafka.iter_batches(CASE.log))
    lagging = [CASE.log[b.position : b.position + b.size_in_bytes] for b in batches[1:6]]  # offsets 1..19
    rsm = RemoteStorageManager(open_driver(f"file://{tmp_path / 'store'}"), prefix="t")
    for directory in (write_partition(tmp_path / "old", str(TP.topic_partition), [SegmentSpec(lagging)]),
                      fixture_partition(CASE, tmp_path / "new")):  # fmt: skip
        tp, (segment,) = read_partition_dir(directory)
        rsm.copy_log_segment(tp, segment.data)
    committed = [m.metadata for m in list_partition(rsm.driver, "t", TP).segments]
    assert [(s.start_offset, s.end_offset) for s in committed] == [(0, 51), (1, 19)]
    # Kafka's case 1: the new leader's 0..51 makes the old one's 1..19 unreferenced.
    assert rsm.list_remote_segments(TP) == committed[:1]
    assert [r.record.offset for r in RemoteLogReader(rsm, TP).records(0)] == list(range(52))
    lagging_newest = committed[1].max_timestamp_ms
    assert rsm.cleanup_log_until(TP, lagging_newest) == 0
    assert len(list_partition(rsm.driver, "t", TP).segments) == 2
    assert rsm.cleanup_log_until(TP, lagging_newest + 1) == 0  # the log keeps its start; the old copy goes
    assert [m.metadata for m in list_partition(rsm.driver, "t", TP).segments] == committed[:1]
