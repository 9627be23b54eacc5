"""A ``kafka-remote`` ``readStream`` keeps the manifests it has read for
the query's run: a trigger and its micro-batch read only the segments'
manifests tiered since the last (they read every one before), one gone
(retention) is let go, and one listed at another size is read again; in
our layout and in Aiven's."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from offload_core import open_driver
from offload_core.fsspec_driver import FsspecDriver
from offload_core.memory import MemoryDriver
from offload_core.model import ObjectInfo
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.rsm.layout import MANIFEST_SUFFIX, partition_prefix
from offload_core.rsm.manifest_bytes import ManifestBytes, read_manifests
from offload_core.spark.kafka_remote import plan_partitions
from offload_core.spark.source import KAFKA_SCHEMA
from offload_core.spark.streaming_kafka import make_stream_reader
from tests.aiven_vectors import aiven_runs, server_properties
from tests.rsm.aiven.stores import put_run
from tests.rsm.segments import numbered_segments, write_partition

pytestmark = pytest.mark.spark


@pytest.fixture
def manifest_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The key of every manifest a filesystem store is asked for (the reads still happen)."""
    keys: list[str] = []
    read = FsspecDriver._read

    def counted(driver: FsspecDriver, key: str, start: int, end: int | None) -> bytes:
        if key.endswith(MANIFEST_SUFFIX):  # ours and Aiven's: "rsm-manifest"
            keys.append(key)
        return read(driver, key, start, end)

    monkeypatch.setattr(FsspecDriver, "_read", counted)
    return keys


@pytest.fixture
def stats(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The key of every object a filesystem store is asked to stat (the stats still happen)."""
    keys: list[str] = []
    stat = FsspecDriver._stat

    def counted(driver: FsspecDriver, key: str) -> ObjectInfo:
        keys.append(key)
        return stat(driver, key)

    monkeypatch.setattr(FsspecDriver, "_stat", counted)
    return keys


def test_a_trigger_reads_only_the_manifests_tiered_since_the_last(
    tmp_path: Path, manifest_reads: list[str], stats: list[str]
) -> None:
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(4, batches=4)))
    for segment in segments[:2]:
        rsm.copy_log_segment(tp, segment.data)
    manifest_reads.clear()  # the copies' own
    reader = make_stream_reader({"url": url, "prefix": "tiered", "topic": "orders", "startingOffsets": "earliest"},
                                KAFKA_SCHEMA)  # fmt: skip
    start = reader.initialOffset()
    assert len(manifest_reads) == 2
    manifest_reads.clear()
    stats.clear()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end["offsets"] == {"orders": {"0": 40}}
    planned = reader.partitions(start, end)
    assert [r.first for p in planned for r in p.ranges] == [0, 20]
    assert manifest_reads == []  # the trigger and its micro-batch: every manifest read before
    assert stats == []  # nor a request for each object listed (through the read transforms, a stat each)
    rsm.copy_log_segment(tp, segments[2].data)
    manifest_reads.clear()
    later = reader.latestOffset(end, ReadAllAvailable())
    assert later["offsets"] == {"orders": {"0": 60}}
    (new,) = manifest_reads
    assert new.endswith(f"{40:020d}-{rsm.list_remote_segments(tp)[-1].segment_id.id}.{MANIFEST_SUFFIX}")
    manifest_reads.clear()
    assert [r.first for p in reader.partitions(end, later) for r in p.ranges] == [40]
    rsm.delete_log_segment(rsm.list_remote_segments(tp)[0])  # retention
    manifest_reads.clear()
    assert reader.latestOffset(later, ReadAllAvailable()) == later
    assert manifest_reads == []
    held = reader.manifests.held(partition_prefix("tiered", tp))  # the segment retention deleted let go
    assert sorted(int(key.rsplit("/", 1)[1].split("-", 1)[0]) for key in held) == [20, 40]


def test_a_manifest_listed_at_another_size_is_read_again() -> None:
    driver = MemoryDriver()
    driver.write("p/m", [b"first"], metadata={})
    driver.write("p/gone", [b"x"], metadata={})
    kept = ManifestBytes()
    assert list(read_manifests(driver, [("p/m", 5), ("p/gone", 1)], kept=kept, group="p/")) == [b"first", b"x"]
    driver.write("p/m", [b"second!"], metadata={})
    driver.delete(["p/gone"])
    # Listed no more, "p/gone" is let go; "p/new", listed and deleted before it was read, is None.
    assert list(read_manifests(driver, [("p/m", 7), ("p/new", 3)], kept=kept, group="p/")) == [b"second!", None]
    assert kept.held("p/") == {"p/m": (7, b"second!")}


def test_what_is_kept_stays_within_the_budget() -> None:
    """Past the budget, the manifests a listing finds last are read again each time."""
    driver = MemoryDriver()
    for key in ("a/1", "a/2", "b/1"):
        driver.write(key, [b"123456"], metadata={})
    kept = ManifestBytes(budget=15)
    assert list(read_manifests(driver, [("a/1", 6), ("a/2", 6)], kept=kept, group="a/")) == [b"123456"] * 2
    assert list(read_manifests(driver, [("b/1", 6)], kept=kept, group="b/")) == [b"123456"]
    assert set(kept.held("a/")) == {"a/1", "a/2"} and kept.held("b/") == {}  # 12 bytes held: no room for 6 more
    driver.write("a/2", [b"12"], metadata={})
    assert list(read_manifests(driver, [("a/2", 2)], kept=kept, group="a/")) == [b"12"]  # a/1 gone, a/2 shrunk
    assert list(read_manifests(driver, [("b/1", 6)], kept=kept, group="b/")) == [b"123456"]
    assert set(kept.held("b/")) == {"b/1"}  # now there is room: 2 + 6 bytes held
    driver.delete(["b/1"])
    assert list(read_manifests(driver, [("b/1", 6)], kept=kept, group="b/")) == [b"123456"]  # kept: not read
    assert kept.room("a/") == 15 - 6


def test_an_aiven_stream_reads_its_manifests_once(tmp_path: Path, manifest_reads: list[str]) -> None:
    config = server_properties(tmp_path / "server.properties", aiven_runs()[0])
    options = {"layout": "aiven", "config": str(config), "topic": "oracle-a", "startingOffsets": "earliest"}
    reader = make_stream_reader(options, KAFKA_SCHEMA)
    start = reader.initialOffset()
    assert len(manifest_reads) == 1
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end["offsets"] == {"oracle-a": {"0": 52}}
    assert reader.partitions(start, end)
    assert len(manifest_reads) == 1


def test_an_aiven_read_reads_the_manifests_of_its_topics_only(tmp_path: Path, manifest_reads: list[str]) -> None:
    """A prefix may hold many topics: a read of one does not read the others' manifests."""
    url = f"file://{tmp_path / 'store'}"
    with open_driver(url) as driver:
        ours = put_run(driver, aiven_runs()[0])
        for number in range(3):
            put_run(driver, aiven_runs()[0], topic=f"other-{number}")
    options = {"url": url, "layout": "aiven", "topic": ours.topic, "startingOffsets": "earliest"}
    assert [p.partition for p in plan_partitions(options)] == [0]
    assert manifest_reads == [ours.key]
    manifest_reads.clear()
    reader = make_stream_reader(options, KAFKA_SCHEMA)
    assert reader.latestOffset(reader.initialOffset(), ReadAllAvailable())["offsets"] == {ours.topic: {"0": 52}}
    assert manifest_reads == [ours.key]
    other = make_stream_reader({**options, "topic": "other-1"}, KAFKA_SCHEMA)
    assert other.latestOffset(other.initialOffset(), ReadAllAvailable())["offsets"] == {"other-1": {"0": 52}}
