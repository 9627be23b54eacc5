"""RemoteStorageManager lifecycle, after Kafka's LocalTieredStorageTest and
RemoteLogSegmentLifecycleTest, on the filesystem driver and S3 (moto)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core.errors import (
    ConfigError,
    CopyCancelledError,
    FormatError,
    InvalidRangeError,
    NotFoundError,
    StateError,
)
from offload_core.formats import kafka
from offload_core.rsm import (
    IndexType,
    LogSegmentData,
    RemoteLogMetadataManager,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
    RemoteStorageManager,
    TopicIdPartition,
    TopicPartition,
    read_partition_dir,
)
from offload_core.storage import StorageDriver
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

CASES = kafka_cases()
FILES = {IndexType.OFFSET: "offset_index", IndexType.TIMESTAMP: "time_index",
         IndexType.PRODUCER_SNAPSHOT: "producer_snapshot"}  # fmt: skip


@pytest.fixture
def rlmm(tmp_path: Path) -> RemoteLogMetadataManager:
    with RemoteLogMetadataManager(tmp_path / "rlmm.sqlite") as manager:
        yield manager  # type: ignore[misc]


def manager_for(
    store: StorageDriver, rlmm: RemoteLogMetadataManager | None = None, **options: int
) -> RemoteStorageManager:
    return RemoteStorageManager(store, prefix="tiered", metadata_manager=rlmm, **options)  # type: ignore[arg-type]


def keys(store: StorageDriver) -> list[str]:
    return [info.key for info in store.list("tiered/")]


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


def test_fetch_ranges_are_inclusive_and_bad_ones_raise(store, tmp_path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(1))
    tp, (segment,) = read_partition_dir(directory)
    rsm = manager_for(store, buffer_size=1000)
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    log = segment.data.log_segment.read_bytes()
    assert rsm.fetch_log_segment(remote, 10, 2999).read() == log[10:3000]
    assert rsm.fetch_log_segment(remote, len(log) - 1).read() == log[-1:]
    assert rsm.fetch_log_segment(remote, 5, 5).read() == log[5:6]
    stream = rsm.fetch_log_segment(remote, 100)
    stream.seek(1000, io.SEEK_CUR)
    assert stream.read(10) == log[1100:1110]
    for start, end in ((-1, None), (10, 9), (len(log), None), (len(log) + 5, None), (len(log), len(log) + 9)):
        with pytest.raises(InvalidRangeError):
            rsm.fetch_log_segment(remote, start, end)
    # Kafka's contract: the stream ends at the smaller of the end position and the segment's end.
    assert rsm.fetch_log_segment(remote, 0, len(log)).read() == log
    assert rsm.fetch_log_segment(remote, len(log) - 10, 2**31 - 1).read() == log[-10:]


def test_fetch_is_lazy(store, tmp_path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(1, batches=100))
    tp, (segment,) = read_partition_dir(directory)
    rsm = manager_for(store, buffer_size=4096)
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    rsm.manifest(remote)
    before = store.request_counts["read"]
    stream = rsm.fetch_log_segment(remote, 50_000)
    assert store.request_counts["read"] == before  # nothing fetched until read
    assert len(stream.read(100)) == 100
    assert store.request_counts["read"] == before + 1


def test_transaction_index_present_is_returned(store, rlmm, tmp_path) -> None:
    directory = write_partition(tmp_path, "txn-0", [transactional_segment()])
    tp, (segment,) = read_partition_dir(directory)
    rsm = manager_for(store, rlmm)
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    assert rsm.fetch_index(remote, IndexType.TRANSACTION).read() == segment.data.transaction_index.read_bytes()


def test_never_copied_segment_is_not_found(store) -> None:
    tp = TopicIdPartition(TOPIC_ID, TopicPartition("ghost", 0))
    never = RemoteLogSegmentMetadata(RemoteLogSegmentId.generate(tp), 0, 9, 1, 0, 0, 100, {0: 0})
    rsm = manager_for(store)
    with pytest.raises(NotFoundError, match="never copied"):
        rsm.fetch_log_segment(never, 0)
    for index_type in IndexType:
        with pytest.raises(NotFoundError):
            rsm.fetch_index(never, index_type)
    rsm.delete_log_segment_data(never)  # deleting what is not there is fine
    assert rsm.list_remote_segments(tp) == []


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


def test_read_index_entries(store, tmp_path) -> None:
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    rsm = manager_for(store, index_entry_bytes=5000)
    entries = rsm.copy_log_segment(tp, segment.data)
    assert len(entries) > 2 and entries[0].first_offset == 0 and entries[-1].last_offset == 99
    assert all(a.last_offset + 1 == b.first_offset and a.position + a.length == b.position
               for a, b in zip(entries, entries[1:], strict=False))  # fmt: skip
    entry = entries[1]
    whole = rsm.read(entry, 10**9, entry.first_offset, False)
    batches = list(kafka.iter_batches(whole))
    assert len(whole) == entry.length and batches[0].base_offset == entry.first_offset
    before = store.request_counts["read"]
    from_middle = rsm.read(entry, 10**9, batches[1].base_offset + 2, False)
    assert store.request_counts["read"] == before + 1
    assert kafka.decode_batch_header(from_middle).base_offset == batches[1].base_offset
    one = batches[0].size_in_bytes
    assert rsm.read(entry, one + 10, entry.first_offset, False) == whole[:one]  # never a partial batch
    assert rsm.read(entry, 10, entry.first_offset, False) == b""
    assert rsm.read(entry, 10, entry.first_offset, True) == whole[:one]  # at least one whole batch


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


def test_states_recorded_through_a_copy(store, rlmm, tmp_path) -> None:
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    rsm = manager_for(store, rlmm)
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rlmm.list_remote_log_segments(tp)
    assert remote.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED
    assert rlmm.remote_log_size(tp) == remote.segment_size_in_bytes
    assert rlmm.remote_log_segment_metadata(tp, 0, 57) == remote
    assert rlmm.highest_offset_for_epoch(tp, 0) == 99


def test_topic_names_cannot_escape_the_prefix() -> None:
    for bad in ("../etc", "a/b", "", ".", "..", "x" * 250, "ünïcode"):
        with pytest.raises(ConfigError, match="legal Kafka topic"):
            TopicPartition(bad, 0)
    with pytest.raises(ConfigError):
        TopicPartition("ok", -1)
    assert TopicPartition.parse("my.topic-with-dash-7") == TopicPartition("my.topic-with-dash", 7)


def test_configure(tmp_path) -> None:
    rsm = RemoteStorageManager()
    with pytest.raises(ConfigError, match="storage.url"):
        rsm.configure({})
    with pytest.raises(ConfigError, match="unknown RemoteStorageManager setting"):
        rsm.configure({"storage.url": f"file://{tmp_path}", "chunk.size": 1})
    with pytest.raises(ConfigError, match="fetch.buffer.bytes"):
        rsm.configure({"storage.url": f"file://{tmp_path}", "fetch.buffer.bytes": 0})
    rsm.configure({"storage.url": f"file://{tmp_path / 's'}", "key.prefix": "p", "metadata.path": str(tmp_path / "m"),
                   "read.ahead.bytes": 2**26, "read.ahead.range.bytes": 2**20})  # fmt: skip
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    assert rsm.fetch_log_segment(remote, 0).read() == segment.data.log_segment.read_bytes()
    assert rsm.metadata_manager is not None and rsm.read_ahead is not None
    rsm.close()


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


def test_copies_and_deletes_are_reported_as_events(store, tmp_path) -> None:
    from offload_core.hooks import Event

    events: list[Event] = []
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(2)))
    rsm = RemoteStorageManager(store, prefix="tiered", emit=events.append)
    rsm.copy_log_segment(tp, segments[0].data)
    (remote,) = rsm.list_remote_segments(tp)
    with rsm.fetch_log_segment(remote, 100) as stream:
        served = len(stream.read(5000))
    rsm.delete_log_segment(remote)
    broken = LogSegmentData(tmp_path / "missing.log", *[segments[1].data.offset_index] * 2, None,
                            segments[1].data.producer_snapshot_index, b"0\n0\n")  # fmt: skip
    meta = RemoteLogSegmentMetadata(RemoteLogSegmentId.generate(tp), 0, 0, 0, 0, 0, 0, {0: 0})
    with pytest.raises(FileNotFoundError):
        rsm.copy_log_segment_data(meta, broken)
    steps = [(e.fields["step"], e.fields["base_offset"]) for e in events if e.kind == "rsm.segment"]
    assert steps == [("copied", 0), ("fetched", 0), ("deleted", 0), ("copy_failed", 0)]
    fetched = [e for e in events if e.kind == "rsm.segment" and e.fields["step"] == "fetched"]
    assert fetched[0].fields["bytes"] >= served
    copied = next(e for e in events if e.kind == "rsm.segment")
    assert copied.fields["bytes"] > segments[0].data.log_segment.stat().st_size
    writes = [e for e in events if e.kind == "storage.request" and e.fields["op"] == "write"]
    assert any(e.fields["key"].endswith(".log") for e in writes)


def test_segments_copied_through_transforms_read_back_lazily_and_byte_identical(tmp_path) -> None:
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1, batches=60)))
    rsm = RemoteStorageManager()
    rsm.configure({"storage.url": f"file://{tmp_path / 'store'}", "storage.option.transforms": "zstd,crc32c",
                   "storage.option.transform_chunk_size": 8192})  # fmt: skip
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    log = segment.data.log_segment.read_bytes()
    assert rsm.fetch_log_segment(remote, 0).read() == log
    assert rsm.fetch_index(remote, IndexType.OFFSET).read() == segment.data.offset_index.read_bytes()
    stored = sum(i.size for i in FilesystemDriver(str(tmp_path / "store")).list("") if i.key.endswith(".log"))
    assert stored < len(log) / 3  # compressed where it is stored
    before = rsm.driver.request_counts["read"]
    assert rsm.fetch_log_segment(remote, 20_000, 20_099).read() == log[20_000:20_100]
    assert rsm.driver.request_counts["read"] - before == 1  # one chunk, one GET
    rsm.close()
