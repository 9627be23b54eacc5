"""RemoteStorageManager copies, after Kafka's LocalTieredStorageTest and
RemoteLogSegmentLifecycleTest: what a copy stores and records, what it
refuses, and what a failed or cancelled copy leaves (nothing)."""

from __future__ import annotations

import pytest

from offload_core.errors import ConfigError, CopyCancelledError, FormatError, NotFoundError, StateError
from offload_core.formats import kafka
from offload_core.rsm import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
    TopicPartition,
    read_partition_dir,
)
from offload_core.testing.faults import Fault, FaultyDriver
from tests.kafka_vectors import kafka_cases
from tests.rsm.segments import (
    TOPIC_ID,
    SegmentSpec,
    fixture_partition,
    numbered_segments,
    plain_batch,
    transactional_segment,
    write_partition,
)
from tests.rsm.tiered import keys, manager_for

CASES = kafka_cases()


FILES = {IndexType.OFFSET: "offset_index", IndexType.TIMESTAMP: "time_index",
         IndexType.PRODUCER_SNAPSHOT: "producer_snapshot"}  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kafka_written_segment_round_trips_with_every_index_byte_identical(store, rlmm, tmp_path, case) -> None:
    tp, (segment,) = read_partition_dir(fixture_partition(case, tmp_path))
    rsm = manager_for(store, rlmm)
    entries = rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    assert (remote.start_offset, remote.end_offset) == (0, case.spec["log_end_offset"] - 1)
    assert remote.max_timestamp_ms == case.spec["segment_largest_timestamp"]
    assert remote.segment_size_in_bytes == case.spec["segment_size_bytes"]
    assert dict(remote.segment_leader_epochs) == dict(case.spec["leader_epochs"]["segment_leader_epochs"])
    assert rsm.fetch_log_segment(remote, 0).read() == case.log
    for index_type, kind in FILES.items():
        assert rsm.fetch_index(remote, index_type).read() == case.file(kind)
    assert rsm.fetch_index(remote, IndexType.LEADER_EPOCH).read() == case.file("rlm_leader_epoch_index")
    with pytest.raises(NotFoundError, match="no TRANSACTION index"):
        rsm.fetch_index(remote, IndexType.TRANSACTION)
    assert entries == rsm.get_remote_log_index_entries(remote)
    assert sum(e.length for e in entries) == len(case.log)


def test_empty_segment_is_not_tiered(store, rlmm, tmp_path) -> None:
    directory = write_partition(tmp_path, "empty-0", [SegmentSpec([])])
    tp, (segment,) = read_partition_dir(directory)
    rsm = manager_for(store, rlmm)
    with pytest.raises(StateError, match="holds no records"):
        rsm.copy_log_segment(tp, segment.data)
    assert rsm.list_remote_segments(tp) == [] and keys(store) == []


def test_segment_metadata_is_checked_as_kafka_checks_it() -> None:
    segment_id = RemoteLogSegmentId.generate(TopicIdPartition(TOPIC_ID, TopicPartition("orders", 0)))
    for start, end, epochs, field in ((-1, 5, {0: 0}, "start_offset"), (5, 4, {0: 5}, "end_offset"),
                                      (0, 9, {}, "segment_leader_epochs")):  # fmt: skip
        with pytest.raises(ConfigError, match=field):
            RemoteLogSegmentMetadata(segment_id, start, end, 0, 0, 0, 10, epochs)
    one_offset = RemoteLogSegmentMetadata(segment_id, 5, 5, 0, 0, 0, 10, {3: 5})
    assert one_offset.epoch_end_offset(3) == 5


def test_epochs_of_batches_without_one_come_from_the_checkpoint() -> None:
    checkpoint = [(0, 0), (2, 40), (3, 100), (5, 150)]
    # Kafka's epochEntriesInRange: the entry in force at the start moves to it; entries at or past the end go.
    assert kafka.epochs_in_range(checkpoint, 50, 150) == [(2, 50), (3, 100)]
    assert kafka.epochs_in_range(checkpoint, 100, 101) == [(3, 100)]
    assert kafka.epochs_in_range(checkpoint, 0, 10) == [(0, 0)]
    assert kafka.epochs_in_range([(4, 60)], 0, 50) == []


def test_segment_of_batches_without_epochs_takes_them_from_the_checkpoint(store, tmp_path) -> None:
    batches = [plain_batch(0, 5, timestamp=1, epoch=-1), plain_batch(5, 5, timestamp=2, epoch=-1)]
    directory = write_partition(tmp_path, "old-0", [SegmentSpec(batches)], epochs="0\n2\n2 0\n3 5\n")
    tp, (segment,) = read_partition_dir(directory)
    rsm = manager_for(store)
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    assert dict(remote.segment_leader_epochs) == {2: 0, 3: 5}


def test_one_then_two_segments_listed_by_base_offset(store, rlmm, tmp_path) -> None:
    directory = write_partition(tmp_path, "orders-3", numbered_segments(3))
    tp, segments = read_partition_dir(directory)
    assert tp == TopicIdPartition(TOPIC_ID, TopicPartition("orders", 3))
    assert [s.active for s in segments] == [False, False, True]
    rsm = manager_for(store, rlmm)
    rsm.copy_log_segment(tp, segments[1].data)
    assert [s.start_offset for s in rsm.list_remote_segments(tp)] == [100]
    rsm.copy_log_segment(tp, segments[0].data)
    listed = rsm.list_remote_segments(tp)
    assert [(s.start_offset, s.end_offset) for s in listed] == [(0, 99), (100, 199)]
    assert [s.start_offset for s in rsm.list_remote_segments(tp, min_base_offset=1)] == [100]
    for local, remote in zip(segments, listed, strict=False):
        assert rsm.fetch_log_segment(remote, 0).read() == local.data.log_segment.read_bytes()
        assert rsm.fetch_index(remote, IndexType.OFFSET).read() == local.data.offset_index.read_bytes()
        assert rsm.fetch_index(remote, IndexType.TIMESTAMP).read() == local.data.time_index.read_bytes()
    # The store alone (no metadata manager) says the same.
    assert [m.segment_id for m in manager_for(store).list_remote_segments(tp)] == [s.segment_id for s in listed]


def test_transaction_index_present_is_returned(store, rlmm, tmp_path) -> None:
    directory = write_partition(tmp_path, "txn-0", [transactional_segment()])
    tp, (segment,) = read_partition_dir(directory)
    rsm = manager_for(store, rlmm)
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    assert rsm.fetch_index(remote, IndexType.TRANSACTION).read() == segment.data.transaction_index.read_bytes()


def test_retry_overwrites_with_a_new_segment_id(store, rlmm, tmp_path) -> None:
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    rsm = manager_for(store, rlmm)
    rsm.copy_log_segment(tp, segment.data)
    (first,) = rsm.list_remote_segments(tp)
    rsm.copy_log_segment(tp, segment.data)
    (second,) = rsm.list_remote_segments(tp)
    assert second.segment_id != first.segment_id
    assert all(first.segment_id.id not in key for key in keys(store))
    assert rsm.fetch_log_segment(second, 0).read() == segment.data.log_segment.read_bytes()


@pytest.mark.parametrize(("op", "nth", "key"), [("part", 2, ".log"), ("write", 1, ".timeindex"),
                                               ("write", 1, ".rsm-manifest")],
                         ids=["log-part", "timeindex", "manifest"])  # fmt: skip
def test_failed_copy_removes_its_partial_objects(store, rlmm, tmp_path, op, nth, key) -> None:
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    fault = Fault(op, nth=nth, key=key, permanent=True)
    faulty = FaultyDriver(store, [fault])
    rsm = manager_for(faulty, rlmm, buffer_size=4096)
    with pytest.raises(Exception, match="injected"):
        rsm.copy_log_segment(tp, segment.data)
    assert fault.fired == 1
    assert keys(store) == []
    assert rlmm.list_remote_log_segments(tp) == []  # the attempt went to DELETE_SEGMENT_FINISHED


def test_damaged_segment_is_refused_and_leaves_nothing(store, rlmm, tmp_path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(1))
    tp, (segment,) = read_partition_dir(directory)
    log = bytearray(segment.data.log_segment.read_bytes())
    log[3000] ^= 0x40
    segment.data.log_segment.write_bytes(bytes(log))
    with pytest.raises(FormatError, match="CRC-32C"):
        manager_for(store, rlmm).copy_log_segment(tp, segment.data)
    assert keys(store) == []


def test_cancel_stops_a_copy_and_removes_its_objects(store, rlmm, tmp_path) -> None:
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    rsm = manager_for(store, rlmm, buffer_size=4096)

    class CancellingDriver(FaultyDriver):
        def _write(self, key, parts, metadata, if_absent):  # type: ignore[no-untyped-def]
            def cancel_after_first():  # type: ignore[no-untyped-def]
                for n, part in enumerate(parts):
                    if n == 1:
                        rsm.cancel_copying_log_segment(tp)
                    yield part

            return super()._write(key, cancel_after_first(), metadata, if_absent)

    rsm._driver = CancellingDriver(store, [])
    with pytest.raises(CopyCancelledError):
        rsm.copy_log_segment(tp, segment.data)
    assert keys(store) == []
    rsm._driver = store
    rsm.cancel_copying_log_segment(tp)  # nothing in progress: no effect on later copies
    rsm.copy_log_segment(tp, segment.data)
    assert len(rsm.list_remote_segments(tp)) == 1


def test_states_recorded_through_a_copy(store, rlmm, tmp_path) -> None:
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    rsm = manager_for(store, rlmm)
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rlmm.list_remote_log_segments(tp)
    assert remote.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED
    assert rlmm.remote_log_size(tp) == remote.segment_size_in_bytes
    assert rlmm.remote_log_segment_metadata(tp, 0, 57) == remote
    assert rlmm.highest_offset_for_epoch(tp, 0) == 99


def test_segment_files_that_disagree_are_refused(store, tmp_path) -> None:
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    rsm = manager_for(store)
    metadata = RemoteLogSegmentMetadata(RemoteLogSegmentId.generate(tp), 0, 50, 0, 0, 0,
                                        segment.data.log_segment.stat().st_size, {0: 0})  # fmt: skip
    with pytest.raises(FormatError, match="past the end offset"):
        rsm.copy_log_segment_data(metadata, segment.data)
    preallocated = LogSegmentData(segment.data.log_segment, segment.data.offset_index, tmp_path / "zeros",
                                  None, segment.data.producer_snapshot_index, b"0\n0\n")  # fmt: skip
    (tmp_path / "zeros").write_bytes(bytes(120))
    good = RemoteLogSegmentMetadata(
        RemoteLogSegmentId.generate(tp), 0, 99, 0, 0, 0, metadata.segment_size_in_bytes, {0: 0}
    )
    with pytest.raises(FormatError, match="preallocated"):
        rsm.copy_log_segment_data(good, preallocated)
    assert keys(store) == []
