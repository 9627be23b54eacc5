"""RemoteLogMetadataManager on SQLite: Kafka's state machine, lookups by
leader epoch and offset, sizes, partition deletion, and compare-and-set
across processes."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from offload_core.errors import AlreadyExistsError, NotFoundError, StateError
from offload_core.rsm import (
    RemoteLogMetadataManager,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
    TopicIdPartition,
    TopicPartition,
)
from tests.rsm.segments import TOPIC_ID

S = RemoteLogSegmentState
TP = TopicIdPartition(TOPIC_ID, TopicPartition("orders", 0))


def segment(start: int, end: int, epochs: dict[int, int], size: int = 100) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(RemoteLogSegmentId.generate(TP), start, end, max_timestamp_ms=end, broker_id=1,
                                    event_timestamp_ms=0, segment_size_in_bytes=size,
                                    segment_leader_epochs=epochs)  # fmt: skip


def move(rlmm: RemoteLogMetadataManager, meta: RemoteLogSegmentMetadata, state: RemoteLogSegmentState) -> None:
    rlmm.update_remote_log_segment_state(meta.segment_id, state, event_timestamp_ms=1, broker_id=1)


def test_started_segments_are_invisible_to_lookups(rlmm) -> None:
    meta = segment(0, 99, {0: 0})
    rlmm.add_remote_log_segment_metadata(meta)
    assert rlmm.remote_log_segment_metadata(TP, 0, 50) is None
    assert rlmm.highest_offset_for_epoch(TP, 0) is None
    assert rlmm.remote_log_size(TP) == 0
    assert [s.state for s in rlmm.list_remote_log_segments(TP)] == [S.COPY_SEGMENT_STARTED]
    move(rlmm, meta, S.COPY_SEGMENT_FINISHED)
    assert rlmm.remote_log_segment_metadata(TP, 0, 50).segment_id == meta.segment_id  # type: ignore[union-attr]
    assert rlmm.remote_log_size(TP) == 100


def test_legal_and_illegal_transitions(rlmm) -> None:
    meta = segment(0, 9, {0: 0})
    with pytest.raises(StateError, match="COPY_SEGMENT_STARTED"):
        rlmm.add_remote_log_segment_metadata(replace(meta, state=S.COPY_SEGMENT_FINISHED))
    rlmm.add_remote_log_segment_metadata(meta)
    with pytest.raises(AlreadyExistsError):
        rlmm.add_remote_log_segment_metadata(meta)
    with pytest.raises(StateError, match="cannot move from COPY_SEGMENT_STARTED to DELETE_SEGMENT_FINISHED"):
        move(rlmm, meta, S.DELETE_SEGMENT_FINISHED)
    move(rlmm, meta, S.COPY_SEGMENT_FINISHED)
    move(rlmm, meta, S.COPY_SEGMENT_FINISHED)  # a retry of the same state
    with pytest.raises(StateError):
        move(rlmm, meta, S.COPY_SEGMENT_STARTED)
    move(rlmm, meta, S.DELETE_SEGMENT_STARTED)
    move(rlmm, meta, S.DELETE_SEGMENT_STARTED)
    with pytest.raises(StateError):
        move(rlmm, meta, S.COPY_SEGMENT_FINISHED)
    move(rlmm, meta, S.DELETE_SEGMENT_FINISHED)
    assert rlmm.segment(meta.segment_id) is None
    with pytest.raises(NotFoundError, match="already deleted"):
        move(rlmm, meta, S.DELETE_SEGMENT_FINISHED)
    with pytest.raises(NotFoundError, match="never recorded"):
        move(rlmm, segment(0, 1, {0: 0}), S.COPY_SEGMENT_FINISHED)


def test_lookup_by_leader_epoch_and_offset(rlmm) -> None:
    first = segment(0, 99, {0: 0, 1: 40})
    second = segment(100, 199, {1: 100, 3: 150})
    for meta in (first, second):
        rlmm.add_remote_log_segment_metadata(meta)
        move(rlmm, meta, S.COPY_SEGMENT_FINISHED)
    assert rlmm.remote_log_segment_metadata(TP, 0, 39).segment_id == first.segment_id  # type: ignore[union-attr]
    assert rlmm.remote_log_segment_metadata(TP, 0, 40) is None  # epoch 0 ended at 39
    assert rlmm.remote_log_segment_metadata(TP, 1, 120).segment_id == second.segment_id  # type: ignore[union-attr]
    assert rlmm.remote_log_segment_metadata(TP, 1, 150) is None
    assert rlmm.remote_log_segment_metadata(TP, 2, 120) is None
    assert rlmm.remote_log_segment_metadata(TP, 3, 200) is None
    assert rlmm.highest_offset_for_epoch(TP, 0) == 39
    assert rlmm.highest_offset_for_epoch(TP, 1) == 149
    assert rlmm.highest_offset_for_epoch(TP, 3) == 199
    assert rlmm.highest_offset_for_epoch(TP, 7) is None
    assert rlmm.remote_log_size(TP) == 200
    assert rlmm.remote_log_size(TP, 3) == 100
    assert [s.start_offset for s in rlmm.list_remote_log_segments(TP, 1)] == [0, 100]
    move(rlmm, first, S.DELETE_SEGMENT_STARTED)
    assert rlmm.remote_log_segment_metadata(TP, 0, 10) is None
    assert rlmm.remote_log_size(TP) == 100


def test_partition_delete_states(rlmm) -> None:
    P = RemotePartitionDeleteState
    assert rlmm.remote_partition_delete_state(TP) is None
    with pytest.raises(StateError):
        rlmm.put_remote_partition_delete_state(TP, P.DELETE_PARTITION_STARTED)
    rlmm.put_remote_partition_delete_state(TP, P.DELETE_PARTITION_MARKED)
    rlmm.put_remote_partition_delete_state(TP, P.DELETE_PARTITION_MARKED)
    with pytest.raises(StateError):
        rlmm.put_remote_partition_delete_state(TP, P.DELETE_PARTITION_FINISHED)
    rlmm.put_remote_partition_delete_state(TP, P.DELETE_PARTITION_STARTED)
    rlmm.put_remote_partition_delete_state(TP, P.DELETE_PARTITION_FINISHED)
    with pytest.raises(StateError):
        rlmm.put_remote_partition_delete_state(TP, P.DELETE_PARTITION_STARTED)
    assert rlmm.remote_partition_delete_state(TP) is P.DELETE_PARTITION_FINISHED
    # Kafka forgets a finished deletion: the partition can be deleted again.
    rlmm.put_remote_partition_delete_state(TP, P.DELETE_PARTITION_MARKED)
    assert rlmm.remote_partition_delete_state(TP) is P.DELETE_PARTITION_MARKED


WORKER = """
import sys
from offload_core.errors import StateError
from offload_core.rsm import *
tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 0))
S = RemoteLogSegmentState
with RemoteLogMetadataManager(sys.argv[1]) as rlmm:
    for text in [line.strip() for line in open(sys.argv[2])]:
        seg = RemoteLogSegmentId(tp, text)
        try:
            rlmm.update_remote_log_segment_state(seg, S.COPY_SEGMENT_FINISHED, event_timestamp_ms=1, broker_id=1)
        except StateError:
            pass  # the other process already moved it on
        rlmm.update_remote_log_segment_state(seg, S.DELETE_SEGMENT_STARTED, event_timestamp_ms=1, broker_id=1)
        own = RemoteLogSegmentMetadata(RemoteLogSegmentId.generate(tp), 0, 9, 9, 1, 1, 10, {0: 0})
        rlmm.add_remote_log_segment_metadata(own)
"""


def test_compare_and_set_across_processes(tmp_path) -> None:
    path = tmp_path / "shared.sqlite"
    with RemoteLogMetadataManager(path) as rlmm:
        metas = [segment(i * 10, i * 10 + 9, {0: i * 10}) for i in range(40)]
        for meta in metas:
            rlmm.add_remote_log_segment_metadata(meta)
    ids = tmp_path / "ids"
    ids.write_text("\n".join(m.segment_id.id for m in metas))
    # Two processes race over the same segments and add their own: no move
    # may be lost or applied from a stale read, no insert may vanish.
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, str(path), str(ids)]) for _ in range(2)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0]
    with RemoteLogMetadataManager(path) as rlmm:
        listed = rlmm.list_remote_log_segments(TP)
    shared = {m.segment_id for m in metas}
    assert {s.state for s in listed if s.segment_id in shared} == {S.DELETE_SEGMENT_STARTED}
    assert len([s for s in listed if s.segment_id not in shared]) == 80


def test_listing_by_epoch_includes_copies_in_progress_and_being_deleted(rlmm) -> None:
    started, finished, deleting = segment(0, 9, {0: 0}), segment(10, 19, {0: 10}), segment(20, 29, {0: 20, 1: 25})
    for meta in (started, finished, deleting):
        rlmm.add_remote_log_segment_metadata(meta)
    for meta in (finished, deleting):
        move(rlmm, meta, S.COPY_SEGMENT_FINISHED)
    move(rlmm, deleting, S.DELETE_SEGMENT_STARTED)
    # Kafka's listRemoteLogSegments(epoch): every state but deleted, so cleanups can retry.
    assert [(s.start_offset, s.state) for s in rlmm.list_remote_log_segments(TP, 0)] == [
        (0, S.COPY_SEGMENT_STARTED),
        (10, S.COPY_SEGMENT_FINISHED),
        (20, S.DELETE_SEGMENT_STARTED),
    ]
    assert [s.start_offset for s in rlmm.list_remote_log_segments(TP, 1)] == [20]
    assert rlmm.remote_log_segment_metadata(TP, 0, 22) is None  # not for reads, though


def test_highest_offset_for_an_epoch_never_decreases(rlmm) -> None:
    first, second = segment(0, 99, {0: 0}), segment(100, 149, {0: 100, 1: 120})
    for meta in (first, second):
        rlmm.add_remote_log_segment_metadata(meta)
        move(rlmm, meta, S.COPY_SEGMENT_FINISHED)
    assert (rlmm.highest_offset_for_epoch(TP, 0), rlmm.highest_offset_for_epoch(TP, 1)) == (119, 149)
    for state in (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED):
        move(rlmm, second, state)
    assert (rlmm.highest_offset_for_epoch(TP, 0), rlmm.highest_offset_for_epoch(TP, 1)) == (119, 149)
    for state in (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED):
        move(rlmm, first, state)
    assert rlmm.list_remote_log_segments(TP) == [] and rlmm.highest_offset_for_epoch(TP, 0) == 119
