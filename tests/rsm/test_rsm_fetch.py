"""RemoteStorageManager fetches: Kafka's inclusive ranges, lazy streams,
index entries read by offset, reads through chunk transforms, and what
was never copied."""

from __future__ import annotations

import io

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core.errors import InvalidRangeError, NotFoundError
from offload_core.formats import kafka
from offload_core.rsm import (
    IndexType,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteStorageManager,
    TopicIdPartition,
    TopicPartition,
    read_partition_dir,
)
from tests.rsm.segments import TOPIC_ID, numbered_segments, write_partition
from tests.rsm.tiered import manager_for


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
