"""The streaming readers' offsets, called as Spark calls them (no query):
where a query starts, how a micro-batch is capped, and that
``availableNow`` stops at what was there when it began."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from offload_driver_filesystem.driver import FilesystemDriver
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes, ReadMaxRows

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.errors import ConfigError
from offload_core.fsspec_driver import FsspecDriver
from offload_core.model import Entry, ObjectInfo
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark.source import KAFKA_SCHEMA, SCHEMA
from offload_core.spark.streaming_kafka import make_stream_reader as kafka_stream
from offload_core.spark.streaming_pulsar import make_stream_reader as pulsar_stream
from tests.rsm.segments import numbered_segments, write_partition
from tests.spark.planned_blocks import block_partitions
from tests.spark.test_pulsar_offload_segments import BLOCK, entries_of, stream

pytestmark = pytest.mark.spark


@pytest.fixture
def tiered(tmp_path: Path) -> tuple[str, Any]:
    """A store with orders-0's first segment (offsets 0..19) and a function tiering more of its three."""
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(3, batches=4)))

    def tier(number: int) -> None:
        rsm.copy_log_segment(tp, segments[number].data)

    tier(0)
    return url, tier


def offsets_of(reader: Any, start: dict[str, Any], end: dict[str, Any]) -> list[int]:
    return [o for p in reader.partitions(start, end) for r in p.ranges for o in range(r.first, r.end)]


def test_kafka_starting_latest_and_available_now(tiered: tuple[str, Any]) -> None:
    url, tier = tiered
    reader = kafka_stream({"url": url, "prefix": "tiered", "subscribe": "orders", "startingOffsets": "latest"},
                          KAFKA_SCHEMA)  # fmt: skip
    start = reader.initialOffset()
    assert start == {"store": url, "prefix": "tiered", "offsets": {"orders": {"0": 20}}}
    # Spark's default for a streaming read.
    assert kafka_stream({"url": url, "prefix": "tiered", "subscribe": "orders"}, KAFKA_SCHEMA).initialOffset() == start
    assert reader.latestOffset(start, ReadAllAvailable()) == start  # nothing new: Spark runs no micro-batch
    tier(1)
    reader.prepareForTriggerAvailableNow()
    tier(2)  # after the availableNow query began: not for this run
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end["offsets"] == {"orders": {"0": 40}}
    assert offsets_of(reader, start, end) == list(range(20, 40))
    assert reader.latestOffset(end, ReadAllAvailable()) == end


def test_kafka_max_offsets_per_trigger(tiered: tuple[str, Any]) -> None:
    url, tier = tiered
    tier(1)
    reader = kafka_stream({"url": url, "prefix": "tiered", "topic": "orders", "maxOffsetsPerTrigger": "15",
                           "startingOffsets": "earliest"}, KAFKA_SCHEMA)  # fmt: skip
    assert reader.getDefaultReadLimit() == ReadMaxRows(15)
    start = reader.initialOffset()
    ends = []
    while (end := reader.latestOffset(start, ReadMaxRows(15))) != start:
        first, last = start["offsets"]["orders"]["0"], end["offsets"]["orders"]["0"]
        assert offsets_of(reader, start, end) == list(range(first, last))
        ends.append(last)
        start = end
    assert ends == [15, 30, 40]


def test_kafka_streaming_options(tiered: tuple[str, Any]) -> None:
    url, _ = tiered
    with pytest.raises(ConfigError, match="endingOffsets is for batch reads only"):
        kafka_stream({"url": url, "topic": "orders", "endingOffsets": "latest"}, KAFKA_SCHEMA)
    with pytest.raises(ConfigError, match="kafka-remote: maxOffsetsPerTrigger is a positive integer"):
        kafka_stream({"url": url, "topic": "orders", "maxOffsetsPerTrigger": "0"}, KAFKA_SCHEMA)
    reader = kafka_stream({"url": url, "prefix": "tiered", "topic": "orders"}, KAFKA_SCHEMA)
    with pytest.raises(ConfigError, match="checkpoint holds offsets of kafka-remote store file:///elsewhere"):
        reader.latestOffset({"store": "file:///elsewhere", "prefix": "tiered", "offsets": {}}, ReadAllAvailable())


def test_a_malformed_checkpoint_of_many_partitions_or_ledgers_is_shown_in_part(
    tiered: tuple[str, Any], tmp_path: Path
) -> None:
    """A query's checkpoint may hold thousands of them: the error shows a few."""
    url, _ = tiered
    reader = kafka_stream({"url": url, "prefix": "tiered", "topic": "orders"}, KAFKA_SCHEMA)
    offsets = {"orders": {str(partition): 1.5 for partition in range(5000)}}
    with pytest.raises(ConfigError, match="cannot read: its 'offsets' is ") as raised:
        reader.latestOffset({**reader.initialOffset(), "offsets": offsets}, ReadAllAvailable())
    assert len(str(raised.value)) < 400
    pulsar = pulsar_stream({"path": f"file://{tmp_path / 'bucket'}"}, SCHEMA)
    ledgers = {str(ledger_id): 1.5 for ledger_id in range(5000)}
    with pytest.raises(ConfigError, match="cannot read: its 'ledgers' is ") as raised:
        pulsar.latestOffset({**pulsar.initialOffset(), "ledgers": ledgers}, ReadAllAvailable())
    assert len(str(raised.value)) < 400


@pytest.mark.parametrize(
    "offsets",
    [[], {"orders": [1]}, {"orders": {"0": "x"}}, None, {"orders": {"0": float("inf")}}, {"orders": {"0": 1.5}},
     {"orders": {"0": True}}, {"orders": {"x": 5}}],
)  # fmt: skip
def test_kafka_a_malformed_checkpointed_offset_is_named_as_such(tiered: tuple[str, Any], offsets: object) -> None:
    """Not blamed on another store, nor a bare Python error, nor misread (an
    offset 1.5 or true taken as 1, a partition ``x`` failing the micro-batch's
    planning): it is this query's. Python's ``json`` reads 1e999 as inf."""
    url, _ = tiered
    reader = kafka_stream({"url": url, "prefix": "tiered", "topic": "orders"}, KAFKA_SCHEMA)
    expected = (f"checkpoint holds an offset of kafka-remote store {url} (prefix 'tiered') that this version cannot "
                f"read: its 'offsets' is {offsets!r}, not a map of topics to partitions to offsets; give the query a "
                "new checkpointLocation")  # fmt: skip
    with pytest.raises(ConfigError, match=re.escape(expected)):
        reader.latestOffset({**reader.initialOffset(), "offsets": offsets}, ReadAllAvailable())


def test_pulsar_max_bytes_per_trigger_takes_whole_blocks(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    entries = entries_of(3, 80)
    open_offloader(url, max_block_size=BLOCK).offload(InMemoryReadHandle(3, entries), uuid.uuid4())
    reader = pulsar_stream({"path": url, "decode": "none", "maxBytesPerTrigger": "1"}, SCHEMA)
    assert reader.getDefaultReadLimit() == ReadMaxBytes(1)
    start = reader.initialOffset()
    assert start == {"store": url, "ledgers": {}}
    read: list[tuple[int, int]] = []
    while (end := reader.latestOffset(start, ReadMaxBytes(1))) != start:
        # A budget smaller than a block still takes one block a micro-batch.
        (partition,) = reader.partitions(start, end)
        (task,) = block_partitions(url, [partition])  # the blocks its task reads
        assert len(task.blocks) == 1
        for batch in reader.read(partition):
            read += zip(batch.column("ledger_id").to_pylist(), batch.column("entry_id").to_pylist(), strict=True)
        start = end
    assert len(read) == 80 and sorted(read) == [(3, e) for e in range(80)]
    assert reader.latestOffset(reader.initialOffset(), ReadAllAvailable())["ledgers"] == {"3": 80}


def _counted_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The keys read from now on, by the filesystem driver's own read (under any wrapping driver)."""
    read_keys: list[str] = []
    read = FsspecDriver._read

    def counted(driver: FsspecDriver, key: str, start: int, end: int | None) -> bytes:
        read_keys.append(key)
        return read(driver, key, start, end)

    monkeypatch.setattr(FsspecDriver, "_read", counted)
    return read_keys


def test_pulsar_triggers_read_only_the_indexes_offloaded_since_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=BLOCK)
    offloader.offload(InMemoryReadHandle(3, entries_of(3, 80)), uuid.UUID(int=3))
    stream(url, [Entry(5, e, d) for e, d in enumerate(entries_of(5, 40))])
    listings: list[str] = []
    list_objects = FilesystemDriver._list

    def listed(driver: FilesystemDriver, prefix: str) -> Iterator[ObjectInfo]:
        listings.append(prefix)
        return list_objects(driver, prefix)

    read_keys = _counted_reads(monkeypatch)
    monkeypatch.setattr(FilesystemDriver, "_list", listed)
    reader = pulsar_stream({"path": url, "decode": "none"}, SCHEMA)
    start = reader.initialOffset()
    first = reader.latestOffset(start, ReadAllAvailable())
    assert first["ledgers"] == {"3": 80, "5": 40}
    assert len(read_keys) == 2 and all(key.endswith("index") for key in read_keys)  # one v1 index, one segment's
    assert listings == [""]  # one listing finds both kinds
    read_keys.clear()
    assert reader.latestOffset(first, ReadAllAvailable()) == first
    assert read_keys == []  # nothing new offloaded: no index read again
    offloader.offload(InMemoryReadHandle(4, entries_of(4, 30)), uuid.UUID(int=4))
    assert reader.latestOffset(first, ReadAllAvailable())["ledgers"] == {"3": 80, "4": 30, "5": 40}
    assert read_keys == [f"{uuid.UUID(int=4)}-ledger-4-index"]
    open_driver(url).delete([f"{uuid.UUID(int=3)}-ledger-3", f"{uuid.UUID(int=3)}-ledger-3-index"])
    reader.latestOffset(first, ReadAllAvailable())
    assert [key for key, _ in reader.indexed.whole] == [f"{uuid.UUID(int=4)}-ledger-4"]  # the deleted one forgotten


def test_pulsar_a_micro_batch_plans_only_the_segments_of_its_ledgers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    stream(url, [Entry(5, e, d) for e, d in enumerate(entries_of(5, 40))])
    reader = pulsar_stream({"path": url, "decode": "none"}, SCHEMA)
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    stream(url, [Entry(6, e, d) for e, d in enumerate(entries_of(6, 30))])
    second = reader.latestOffset(first, ReadAllAvailable())
    assert second["ledgers"] == {"5": 40, "6": 30}
    (ledger_5_segment,) = [key for (key, _), sections in reader.indexed.segments.items() if sections[0][0] == 5]
    read_keys = _counted_reads(monkeypatch)
    partitions = reader.partitions(first, second)
    assert len(read_keys) == 1 and not read_keys[0].startswith(ledger_5_segment)  # ledger 6's segment index only
    rows = [(ledger_id, entry_id) for p in partitions for batch in reader.read(p)
            for ledger_id, entry_id in zip(batch.column("ledger_id").to_pylist(),
                                           batch.column("entry_id").to_pylist(), strict=True)]  # fmt: skip
    assert sorted(rows) == [(6, e) for e in range(30)]


def test_pulsar_a_micro_batch_plans_only_the_segment_holding_its_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ledger streamed across five segments (PIP-76 rolls segments under
    an open ledger): the micro-batch of the fifth reads its index only, not
    those of the four before, which hold the ledger's earlier entries."""
    url = f"file://{tmp_path / 'bucket'}"
    entries = entries_of(5, 400)
    for part in range(4):
        stream(url, [Entry(5, e, entries[e]) for e in range(part * 80, part * 80 + 80)])
    reader = pulsar_stream({"path": url, "decode": "none"}, SCHEMA)
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    stream(url, [Entry(5, e, entries[e]) for e in range(320, 400)])
    second = reader.latestOffset(first, ReadAllAvailable())
    assert (first["ledgers"], second["ledgers"]) == ({"5": 320}, {"5": 400})
    read_keys = _counted_reads(monkeypatch)
    partitions = reader.partitions(first, second)
    assert len(read_keys) == 1
    rows = [
        entry_id for p in partitions for batch in reader.read(p) for entry_id in batch.column("entry_id").to_pylist()
    ]
    assert sorted(rows) == list(range(320, 400))


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [("skipped", "2", "its 'skipped' is '2', not a count"), ("skipped", 1.5, "its 'skipped' is 1.5, not a count"),
     ("skipped", -1, "its 'skipped' is -1, not a count"), ("skipped", True, "its 'skipped' is True, not a count"),
     ("ledgers", [], "its 'ledgers' is not a map of ledger ids to entry ids"),
     ("ledgers", {"3": "x"}, "its 'ledgers' is {'3': 'x'}, not a map of ledger ids to entry ids"),
     ("ledgers", {"3": float("inf")}, "its 'ledgers' is {'3': inf}, not a map of ledger ids to entry ids"),
     ("ledgers", {"3": 1.5}, "its 'ledgers' is {'3': 1.5}, not a map of ledger ids to entry ids"),
     ("ledgers", {"3": True}, "its 'ledgers' is {'3': True}, not a map of ledger ids to entry ids"),
     ("ledgers", {"3": -1}, "its 'ledgers' is {'3': -1}, not a map of ledger ids to entry ids")],
)  # fmt: skip
def test_pulsar_a_malformed_checkpointed_offset_is_named_as_such(
    tmp_path: Path, field: str, value: object, named: str
) -> None:
    """Not blamed on another store, nor a bare Python error, nor misread (an
    end 1.5 or true taken as entry 1): it is this query's. Python's ``json``
    reads 1e999 as inf."""
    url = f"file://{tmp_path / 'bucket'}"
    reader = pulsar_stream({"path": url}, SCHEMA)
    offset = {**reader.initialOffset(), field: value}
    expected = f"checkpoint holds an offset of pulsar-offload store {url} that this version cannot read: {named}; "
    with pytest.raises(ConfigError, match=re.escape(expected + "give the query a new checkpointLocation")):
        reader.latestOffset(offset, ReadAllAvailable())
