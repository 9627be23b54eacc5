"""RemoteStorageManager's configuration, the topic names it accepts, and
the events its copies, fetches and deletes report."""

from __future__ import annotations

import pytest

from offload_core.errors import ConfigError
from offload_core.rsm import (
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteStorageManager,
    TopicPartition,
    read_partition_dir,
)
from tests.rsm.segments import numbered_segments, write_partition


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
