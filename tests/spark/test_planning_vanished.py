"""``pulsar-offload``'s planning on the driver when an index it listed is
deleted before it reads it (a retention run racing the planning): with
``failOnDataLoss`` true the planning fails naming the object; with false
the object is left out of the plan and logged, and the rest is planned; a
stream's trigger carries it to a task of the next micro-batch, which
counts it."""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.errors import InvalidKeyError, NotFoundError
from offload_core.formats import pulsar_v1 as v1
from offload_core.fsspec_driver import FsspecDriver
from offload_core.model import Entry
from offload_core.spark import plan_partitions, skipped_objects
from offload_core.spark.data_loss import LOGGER, PlanningSkipsPartition, skip_accumulator
from offload_core.spark.source import SCHEMA
from offload_core.spark.streaming_pulsar import make_stream_reader
from tests.spark.planned_blocks import block_partitions
from tests.spark.test_pulsar_offload_segments import BLOCK, entries_of, stream

pytestmark = pytest.mark.spark

LARGE = str(uuid.UUID(int=3))


@pytest.fixture
def store(tmp_path: Path) -> str:
    """Ledger 3 offloaded whole (v1, 200 entries, larger than the test's
    bytesPerPartition, so the driver reads its index), ledgers 5 and 6
    streamed in a PIP-76 segment each."""
    url = f"file://{tmp_path / 'bucket'}"
    open_offloader(url, max_block_size=BLOCK).offload(InMemoryReadHandle(3, entries_of(3, 200)), uuid.UUID(LARGE))
    for ledger_id in (5, 6):
        stream(url, [Entry(ledger_id, e, d) for e, d in enumerate(entries_of(ledger_id, 100))])
    return url


@pytest.fixture
def doomed(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Keys deleted by the store just before their first read: listed, then gone."""
    keys: set[str] = set()
    read = FsspecDriver._read

    def deleted_first(driver: FsspecDriver, key: str, start: int, end: int | None) -> bytes:
        if key in keys:
            keys.discard(key)
            driver.delete(key)
        return read(driver, key, start, end)

    monkeypatch.setattr(FsspecDriver, "_read", deleted_first)
    return keys


def _segment_index_of(url: str, ledger_id: int) -> str:
    (key,) = [p.data_key for p in block_partitions(url, plan_partitions({"path": url})) if p.ledger_id == ledger_id]
    return key + "-index"


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.context["key"] for record in caplog.records if record.name == LOGGER]  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", ["segment", "large ledger"])
def test_a_batch_plan_fails_naming_an_index_gone(store: str, doomed: set[str], kind: str) -> None:
    gone = _segment_index_of(store, 5) if kind == "segment" else v1.index_key(LARGE, 3)
    doomed.add(gone)
    with pytest.raises(NotFoundError, match=rf"{gone} vanished while the read was planned .*failOnDataLoss=false"):
        plan_partitions({"path": store, "bytesPerPartition": str(BLOCK * 4)})


def test_a_batch_plan_leaves_an_index_gone_out_with_fail_on_data_loss_false(
    store: str, doomed: set[str], caplog: pytest.LogCaptureFixture
) -> None:
    gone = [v1.index_key(LARGE, 3), _segment_index_of(store, 5)]
    doomed.update(gone)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        planned = plan_partitions({"path": store, "bytesPerPartition": str(BLOCK * 4), "failOnDataLoss": "false"})
    assert {p.ledger_id for p in block_partitions(store, planned)} == {6}
    assert sorted(_logged(caplog)) == sorted(gone)


def test_a_stream_trigger_fails_naming_an_index_gone(store: str, doomed: set[str]) -> None:
    gone = _segment_index_of(store, 6)
    doomed.add(gone)
    reader = make_stream_reader({"path": store}, SCHEMA)
    with pytest.raises(NotFoundError, match=rf"{gone} vanished while the read was planned .*failOnDataLoss=false"):
        reader.latestOffset(reader.initialOffset(), ReadAllAvailable())


def test_a_stream_trigger_leaves_an_index_gone_out_with_fail_on_data_loss_false(
    store: str, doomed: set[str], caplog: pytest.LogCaptureFixture
) -> None:
    gone = [v1.index_key(LARGE, 3), _segment_index_of(store, 6)]
    doomed.update(gone)
    reader = make_stream_reader({"path": store, "failOnDataLoss": "false"}, SCHEMA)  # no skip accumulator
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        offset = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    assert offset["ledgers"] == {"5": 100}
    assert "skipped" not in offset  # nothing to count them on: no micro-batch is run to carry them
    assert sorted(_logged(caplog)) == sorted(gone)
    # The next trigger lists neither (an index gone leaves its data object incomplete): nothing more to read.
    assert reader.latestOffset(offset, ReadAllAvailable()) == offset


def test_a_stream_trigger_skip_is_carried_to_a_task_of_the_next_micro_batch_and_counted(
    collecting: Any, store: str, doomed: set[str]
) -> None:
    """Spark's streaming planner sends no accumulator updates: a task of the micro-batch does."""
    gone = [v1.index_key(LARGE, 3), _segment_index_of(store, 6)]
    doomed.update(gone)
    reader = make_stream_reader({"path": store, "failOnDataLoss": "false"}, SCHEMA, skip_accumulator(collecting))
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    planned = reader.partitions(start, end)
    carried = [p for p in planned if isinstance(p, PlanningSkipsPartition)]
    assert len(carried) == 1 and sorted(record["key"] for record in carried[0].records) == sorted(gone)
    assert reader.partitions(start, end) == [p for p in planned if p not in carried]  # carried once

    def run(number: int) -> None:
        list(reader.read(planned[number]))

    tasks = collecting.sparkContext.parallelize(range(len(planned)), len(planned))
    tasks.foreach(run)
    tasks.foreach(run)  # a micro-batch run again: its skips keep their ids
    counted = skipped_objects(collecting).where(f"store = '{store}'")
    assert sorted(row.key for row in counted.collect()) == sorted(gone)


def test_a_stream_trigger_skip_makes_the_next_micro_batch_run_with_nothing_new_to_read(
    spark: Any, store: str, doomed: set[str]
) -> None:
    reader = make_stream_reader({"path": store, "failOnDataLoss": "false"}, SCHEMA, skip_accumulator(spark))
    start = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    assert "skipped" not in start
    stream(store, [Entry(7, e, d) for e, d in enumerate(entries_of(7, 10))])
    (segment,) = {p.data_key for p in block_partitions(store, plan_partitions({"path": store})) if p.ledger_id == 7}
    doomed.add(segment + "-index")
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end["ledgers"] == start["ledgers"] and end["skipped"] == 1


def test_a_large_ledger_whose_index_is_gone_is_read_from_its_segment_with_fail_on_data_loss_false(
    tmp_path: Path, doomed: set[str]
) -> None:
    """Ledger 3 offloaded whole and also streamed in a segment: its whole
    copy's index gone while planning left the segment's copy skipped too
    (the ledger counted as read from the whole copy), so nothing was read."""
    url = f"file://{tmp_path / 'bucket'}"
    entries = entries_of(3, 200)
    open_offloader(url, max_block_size=BLOCK).offload(InMemoryReadHandle(3, entries), uuid.UUID(LARGE))
    stream(url, [Entry(3, e, d) for e, d in enumerate(entries)])
    doomed.add(v1.index_key(LARGE, 3))
    planned = plan_partitions({"path": url, "bytesPerPartition": str(BLOCK * 4), "failOnDataLoss": "false"})
    tasks = block_partitions(url, planned)
    assert {p.ledger_id for p in tasks} == {3}
    (data_key,) = {p.data_key for p in tasks}
    assert data_key != v1.data_key(LARGE, 3) and tasks[0].covered()[0] == 0  # the segment's copy, from entry 0


def test_a_key_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    """A directory the filesystem driver lists as it finds it (not UTF-8) holding a segment."""
    url = f"file://{tmp_path / 'bucket'}"
    stream(url, [Entry(5, e, d) for e, d in enumerate(entries_of(5, 10))])
    root = tmp_path / "bucket"
    odd = Path(os.fsdecode(bytes(root) + b"/bad\xff"))
    odd.mkdir()
    for path in root.iterdir():
        if path.is_file():
            (odd / path.name).write_bytes(path.read_bytes())
    with pytest.raises(InvalidKeyError, match="is not valid UTF-8 text"):
        plan_partitions({"path": url})
