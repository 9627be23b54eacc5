"""failOnDataLoss for pulsar-offload: an object a partition reads (a v1
ledger's data object, a PIP-76 segment's, a MapFile ledger's) deleted
between planning and reading fails the task naming it, its ledger and the
partition's entries, or is skipped, the rows given before kept, one record
on the data-loss logger per skipped partition; batch, Arrow and streaming."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PythonException
from pyspark.sql.pandas.types import to_arrow_schema

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.errors import ConfigError, NotFoundError
from offload_core.model import Entry
from offload_core.spark import plan_partitions, skipped_objects
from offload_core.spark.data_loss import LOGGER
from offload_core.spark.ledger_groups import LedgerGroupPartition
from offload_core.spark.pulsar_offload import BlockRangePartition, read_partition, read_partition_batches
from offload_core.spark.read_options import Decode
from offload_core.spark.source import SCHEMA
from offload_core.spark.store_tasks import Store
from tests.spark.planned_blocks import block_partitions
from tests.spark.test_jobs_over_mapfiles import write_mapfile
from tests.spark.test_pulsar_offload_segments import BLOCK, entries_of, stream

pytestmark = pytest.mark.spark


@pytest.fixture
def store(tmp_path: Path) -> str:
    """Ledger 3 offloaded whole (v1, 200 entries), ledger 5 streamed in a PIP-76 segment (100 entries)."""
    url = f"file://{tmp_path / 'bucket'}"
    open_offloader(url, max_block_size=BLOCK).offload(InMemoryReadHandle(3, entries_of(3, 200)), uuid.uuid4())
    stream(url, [Entry(5, e, d) for e, d in enumerate(entries_of(5, 100))])
    return url


def _only(url: str, ledger_id: int, **options: str) -> BlockRangePartition:
    """The one block-range partition of ``ledger_id`` its task reads (its
    blocks in one partition; a packed partition's, unpacked as its task
    unpacks it)."""
    (partition,) = [p for p in block_partitions(url, plan_partitions({"path": url, **options}))
                    if p.ledger_id == ledger_id]  # fmt: skip
    assert len(partition.blocks) > 2
    return partition


def _delete(url: str, key: str) -> None:
    Path(url.removeprefix("file://"), key).unlink()


def _rows_then_lost(url: str, partition: Any, fail_on_data_loss: bool) -> tuple[list[int], Iterator[Any]]:
    """The entry ids of the first block's rows, read before the object is deleted, and the rest to read."""
    rows = read_partition(Store.of(url), partition, Decode.NONE, fail_on_data_loss)
    first = [next(rows)[1]]
    _delete(url, partition.data_key)
    return first, rows


@pytest.mark.parametrize("ledger_id", [3, 5], ids=["v1", "segment"])
def test_an_object_gone_fails_the_partition_naming_it(store: str, ledger_id: int) -> None:
    partition = _only(store, ledger_id)
    _delete(store, partition.data_key)
    last = 199 if ledger_id == 3 else "the object's end"
    with pytest.raises(NotFoundError, match=rf"{partition.data_key} \(ledger {ledger_id}, entries 0 to {last}\) "
                                            "vanished after the read was planned: .*; set failOnDataLoss=false to "
                                            "skip what is gone"):  # fmt: skip
        list(read_partition(Store.of(store), partition, Decode.NONE))


@pytest.mark.parametrize("ledger_id", [3, 5], ids=["v1", "segment"])
def test_an_object_gone_mid_partition_keeps_what_was_read_and_logs_the_rest(
    store: str, ledger_id: int, caplog: pytest.LogCaptureFixture
) -> None:
    partition = _only(store, ledger_id, failOnDataLoss="false")
    second_block = partition.blocks[1][2]
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first, rest = _rows_then_lost(store, partition, fail_on_data_loss=False)
        got = first + [row[1] for row in rest]
    assert got == list(range(second_block))  # the first block's entries, none after
    (record,) = caplog.records
    last = 199 if ledger_id == 3 else None  # a segment run's last partition ends where the segment's blocks do
    end = "the object's end" if last is None else last
    assert record.name == LOGGER and record.levelno == logging.WARNING
    assert record.getMessage() == (
        f"pulsar-offload: {partition.data_key} (ledger {ledger_id}, entries {second_block} to {end}) vanished after "
        "the read was planned; skipped, as failOnDataLoss=false"
    )
    expected = {"source": "pulsar-offload", "store": store, "key": partition.data_key, "ledger_id": str(ledger_id),
                "first_entry": str(second_block), "reason": "vanished"}  # fmt: skip
    if last is not None:
        expected["last_entry"] = str(last)
    context = dict(record.context)  # type: ignore[attr-defined]
    assert re.fullmatch("[0-9a-f]{32}", context.pop("skip_id"))  # the skip's id, as accumulated too
    assert context == expected


def test_the_arrow_path_fails_or_skips_alike(store: str, caplog: pytest.LogCaptureFixture) -> None:
    partition = _only(store, 3)
    schema = to_arrow_schema(SCHEMA, timezone="UTC")
    batches = read_partition_batches(Store.of(store), partition, schema, 10_000)
    next(batches)
    _delete(store, partition.data_key)
    with pytest.raises(NotFoundError, match=rf"{partition.data_key} \(ledger 3, entries 0 to 199\) vanished"):
        list(batches)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert list(read_partition_batches(Store.of(store), partition, schema, 10_000, False)) == []
    (record,) = caplog.records
    assert record.context["first_entry"] == "0" and record.context["last_entry"] == "199"  # type: ignore[attr-defined]


def test_a_mapfile_ledger_gone_fails_or_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    url = f"file://{tmp_path / 'hadoop'}"
    ledger = write_mapfile(url, 8)
    (partition,) = plan_partitions({"path": url, "entries": "8:10-"})
    _delete(url, ledger.data_key)
    directory = ledger.data_key.rsplit("/", 1)[0]  # what the packed partition knows the ledger by
    with pytest.raises(NotFoundError, match=rf"{directory} \(ledger 8, entries 10 to the object's end\) vanished "
                                            rf"after the read was planned: .*'{ledger.data_key}' is missing"
                                            ".*failOnDataLoss=false"):  # fmt: skip
        list(read_partition(Store.of(url), partition, Decode.NONE))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert list(read_partition(Store.of(url), partition, Decode.NONE, fail_on_data_loss=False)) == []
    (record,) = caplog.records
    context = dict(record.context)  # type: ignore[attr-defined]
    assert re.fullmatch("[0-9a-f]{32}", context.pop("skip_id"))
    assert context == {"source": "pulsar-offload", "store": url, "key": directory,
                       "ledger_id": "8", "first_entry": "10", "reason": "vanished"}  # fmt: skip


def test_fail_on_data_loss_is_true_or_false() -> None:
    with pytest.raises(ConfigError, match="pulsar-offload: failOnDataLoss is true or false, not 'maybe'"):
        plan_partitions({"path": "memory://nowhere", "failOnDataLoss": "maybe"})


def _planned_then_lost(spark: Any, url: str, **options: str) -> tuple[Any, str]:
    """The rows of a read of ``url`` (an RDD) whose ledger 3's data object is deleted once the read is planned."""
    # The RDD holds the planned partitions; a DataFrame action would plan the read anew, without ledger 3.
    rows = spark.read.format("pulsar-offload").options(decode="none", **options).load(url).rdd
    assert rows.getNumPartitions() == 2
    partition = _only(url, 3)
    _delete(url, partition.data_key)
    return rows, partition.data_key


def test_a_ledger_gone_between_planning_and_reading_is_skipped_and_counted(collecting: Any, store: str) -> None:
    planned, lost = _planned_then_lost(collecting, store, failOnDataLoss="false")
    rows = planned.collect()
    assert sorted((row.ledger_id, row.entry_id) for row in rows) == [(5, entry_id) for entry_id in range(100)]
    skipped = skipped_objects(collecting).where(f"store = '{store}'")
    assert skipped.count() == 1
    (row,) = skipped.drop("ts", "message").collect()
    assert row.asDict() == {"source": "pulsar-offload", "store": store, "key": lost, "topic": None, "partition": None,
                            "first_offset": None, "last_offset": None, "reason": "vanished", "ledger_id": 3,
                            "first_entry": 0, "last_entry": 199}  # fmt: skip


def test_a_ledger_gone_between_planning_and_reading_fails_the_query_naming_it(collecting: Any, store: str) -> None:
    planned, lost = _planned_then_lost(collecting, store)
    with pytest.raises(PythonException, match=rf"{lost} .ledger 3, entries 0 to 199. vanished .*failOnDataLoss=false"):
        planned.collect()


def test_a_stream_skips_a_ledger_gone_after_planning_and_counts_it(collecting: Any, store: str, tmp_path: Path) -> None:
    frame = collecting.readStream.format("pulsar-offload").options(decode="none", failOnDataLoss="false").load(store)
    got: list[tuple[int, int]] = []
    lost: list[str] = []

    def lose_then_read(batch: Any, _: int) -> None:
        # The micro-batch's partitions are planned with its physical plan; the action then runs this plan.
        batch._jdf.queryExecution().executedPlan()
        if not lost:
            lost.append(_only(store, 3).data_key)
            _delete(store, lost[0])
        got.extend((r.ledger_id, r.entry_id) for r in batch.select("ledger_id", "entry_id").collect())

    query = (frame.writeStream.foreachBatch(lose_then_read).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())  # fmt: skip
    query.awaitTermination()
    assert sorted(got) == [(5, entry_id) for entry_id in range(100)]
    (row,) = skipped_objects(collecting).where(f"store = '{store}'").drop("ts", "message").collect()
    assert row.asDict() == {"source": "pulsar-offload", "store": store, "key": lost[0], "topic": None,
                            "partition": None, "first_offset": None, "last_offset": None, "reason": "vanished",
                            "ledger_id": 3, "first_entry": 0, "last_entry": 199}  # fmt: skip


def test_a_packed_task_skips_a_ledger_gone_and_reads_the_others(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=BLOCK)
    for ledger_id in (1, 2, 3):
        # uuids in ledger order: the task reads in key order and fails on the first ledger gone
        offloader.offload(InMemoryReadHandle(ledger_id, entries_of(ledger_id, 50)), uuid.UUID(int=ledger_id))
    (group,) = plan_partitions({"path": url})
    assert isinstance(group, LedgerGroupPartition)
    keys = {ledger_id: key for key, ledger_id, _ in group.ledgers()}
    _delete(url, keys[1])  # its data object: the index still names its blocks
    _delete(url, keys[3] + "-index")  # its index: the task cannot find its blocks
    with pytest.raises(NotFoundError, match=rf"{keys[1]} \(ledger 1, entries 0 to 49\) vanished"):
        list(read_partition(Store.of(url), group, Decode.NONE))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        rows = [row[:2] for row in read_partition(Store.of(url), group, Decode.NONE, fail_on_data_loss=False)]
    assert rows == [(2, entry_id) for entry_id in range(50)]
    skipped = sorted((r.context["ledger_id"], r.context["key"], r.context.get("last_entry")) for r in caplog.records)  # type: ignore[attr-defined]
    assert skipped == [("1", keys[1], "49"), ("3", keys[3] + "-index", None)]
