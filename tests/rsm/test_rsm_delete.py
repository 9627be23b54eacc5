"""RemoteStorageManager deletes: a segment, a whole partition, and the
segments retention ends."""

from __future__ import annotations

import pytest

from offload_core.errors import NotFoundError
from offload_core.rsm import RemotePartitionDeleteState, read_partition_dir
from tests.rsm.segments import TOPIC_ID, numbered_segments, write_partition
from tests.rsm.tiered import keys, manager_for


def test_delete_segment(store, rlmm, tmp_path) -> None:
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(2)))
    rsm = manager_for(store, rlmm)
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    first, second = rsm.list_remote_segments(tp)
    rsm.delete_log_segment(first)
    rsm.delete_log_segment(first)
    assert rsm.list_remote_segments(tp) == [second]
    assert rlmm.segment(first.segment_id) is None
    with pytest.raises(NotFoundError):
        manager_for(store, rlmm).fetch_log_segment(first, 0)
    assert all(first.segment_id.id not in key for key in keys(store))


def test_delete_topic_partition_removes_everything(store, rlmm, tmp_path) -> None:
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(2)))
    other_tp, other = read_partition_dir(write_partition(tmp_path, "orders-1", numbered_segments(1)))
    rsm = manager_for(store, rlmm)
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    rsm.copy_log_segment(other_tp, other[0].data)
    # A copy that died half way (no manifest) is removed too.
    store.write(f"tiered/orders-0-{TOPIC_ID}/00000000000000000200-AAAAAAAAAAAAAAAAAAAAAA.log", [b"x"], metadata={})
    rsm.delete_topic_partition(tp)
    assert rlmm.remote_partition_delete_state(tp) is RemotePartitionDeleteState.DELETE_PARTITION_FINISHED
    assert rsm.list_remote_segments(tp) == []
    assert [k for k in keys(store) if "/orders-0-" in k] == []
    assert len(rsm.list_remote_segments(other_tp)) == 1
    rsm.delete_topic_partition(tp)  # deleting it again is harmless, as in Kafka
    assert rlmm.remote_partition_delete_state(tp) is RemotePartitionDeleteState.DELETE_PARTITION_FINISHED
    assert len(rsm.list_remote_segments(other_tp)) == 1


def test_cleanup_log_until(store, rlmm, tmp_path) -> None:
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(3)))
    rsm = manager_for(store, rlmm)
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    first, second, third = rsm.list_remote_segments(tp)
    assert rsm.cleanup_log_until(tp, first.max_timestamp_ms) == 0
    assert rsm.cleanup_log_until(tp, second.max_timestamp_ms) == second.start_offset
    assert [s.segment_id for s in rsm.list_remote_segments(tp)] == [second.segment_id, third.segment_id]
    assert rsm.cleanup_log_until(tp, third.max_timestamp_ms + 1) == third.end_offset + 1
    assert rsm.list_remote_segments(tp) == []
    assert rlmm.remote_log_size(tp) == 0
