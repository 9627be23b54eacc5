"""A real ``readStream`` of ``pulsar-offload`` whose trigger's planning finds
an index gone (``failOnDataLoss=false``): Spark plans a stream in a Python
process of its own, which sends no accumulator updates and whose logs no
query reads, so the skip is counted only if it reaches a task. The index
vanishes in that process through a store plugin its Python workers load
(:mod:`tests.spark.vanishing_store`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from offload_core.model import Entry
from offload_core.spark import skipped_objects
from offload_core.spark.data_loss import skip_accumulator
from offload_core.spark.session import _counting_skips
from offload_core.spark.source import PulsarOffloadDataSource
from tests.spark import vanishing_store
from tests.spark.test_planning_vanished import _segment_index_of
from tests.spark.test_pulsar_offload_segments import entries_of, stream

pytestmark = pytest.mark.spark


def _register(spark: Any) -> None:
    """``pulsar-offload`` registered as ``register_sources`` registers it: its
    Python workers get the SparkContext's environment as it is now."""
    spark.dataSource.register(_counting_skips(PulsarOffloadDataSource, skip_accumulator(spark)))


@pytest.fixture
def vanishing(collecting: Any, tmp_path: Path) -> Iterator[Any]:
    """The session, its ``pulsar-offload`` workers loading the vanishing store's plugin, for one test."""
    site = tmp_path / "site"
    vanishing_store.install(site)
    environment = collecting.sparkContext.environment
    before = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = os.pathsep.join(path for path in (str(site), before) if path)
    _register(collecting)
    try:
        yield collecting
    finally:
        if before is None:
            del environment["PYTHONPATH"]
        else:
            environment["PYTHONPATH"] = before
        _register(collecting)


@dataclass(frozen=True)
class DoomedStore:
    """Ledgers 5 and 6 streamed in a segment each, the index of 6's doomed."""

    url: str  # through the vanishing store
    gone: str  # the doomed index's key
    options: dict[str, str]  # a failOnDataLoss=false read's, the doomed directory given to the store


@pytest.fixture
def doomed_store(tmp_path: Path) -> DoomedStore:
    bucket, doomed = tmp_path / "bucket", tmp_path / "doomed"
    doomed.mkdir()
    for ledger_id in (5, 6):
        stream(f"file://{bucket}", [Entry(ledger_id, e, d) for e, d in enumerate(entries_of(ledger_id, 100))])
    gone = _segment_index_of(f"file://{bucket}", 6)
    vanishing_store.doom(doomed, gone)
    options = {"decode": "none", "failOnDataLoss": "false", "driver.doomed": str(doomed)}
    return DoomedStore(f"{vanishing_store.SCHEME}://{bucket}", gone, options)


def _run(spark: Any, store: DoomedStore, checkpoint: Path, sink: Callable[[Any, int], None], *, now: bool) -> None:
    """A query of ``store`` to ``sink`` (``foreachBatch``), run until it has read what the store holds."""
    frame = spark.readStream.format("pulsar-offload").options(**store.options).load(store.url)
    writer = frame.writeStream.option("checkpointLocation", str(checkpoint)).foreachBatch(sink)
    if now:
        writer.trigger(availableNow=True).start().awaitTermination()
        return
    query = writer.trigger(processingTime="0 seconds").start()
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def _counted(spark: Any, store: DoomedStore) -> list[dict[str, Any]]:
    """The skips ``skipped_objects`` holds of ``store``, without their time and message."""
    rows = skipped_objects(spark).where(f"store = '{store.url}'").drop("ts", "message")
    return [row.asDict() for row in rows.collect()]


@pytest.mark.parametrize("now", [True, False], ids=["availableNow", "processingTime"])
def test_a_stream_counts_an_index_gone_while_its_trigger_was_planned(
    vanishing: Any, doomed_store: DoomedStore, tmp_path: Path, now: bool
) -> None:
    got: list[tuple[int, int]] = []

    def collect(batch: Any, _: int) -> None:
        got.extend((row.ledger_id, row.entry_id) for row in batch.select("ledger_id", "entry_id").collect())

    _run(vanishing, doomed_store, tmp_path / "checkpoint", collect, now=now)
    assert not any((tmp_path / "doomed").iterdir())  # the planner read it: it vanished there
    assert sorted(got) == [(5, entry_id) for entry_id in range(100)]
    # Again from the checkpoint, whose offset counts the skip: nothing more is read, nor counted.
    _run(vanishing, doomed_store, tmp_path / "checkpoint", collect, now=now)
    assert len(got) == 100
    assert _counted(vanishing, doomed_store) == [
        {"source": "pulsar-offload", "store": doomed_store.url, "key": doomed_store.gone, "topic": None,
         "partition": None, "first_offset": None, "last_offset": None, "reason": "vanished", "ledger_id": None,
         "first_entry": None, "last_entry": None}
    ]  # fmt: skip


def test_a_stream_counts_the_skip_when_its_sink_takes_a_few_rows_of_the_micro_batch(
    vanishing: Any, doomed_store: DoomedStore, tmp_path: Path
) -> None:
    """A ``limit``, ``take`` or ``show`` runs a micro-batch's first tasks only, until it has its rows."""
    taken: list[Any] = []
    _run(vanishing, doomed_store, tmp_path / "checkpoint", lambda batch, _: taken.extend(batch.take(1)), now=True)
    assert len(taken) == 1
    assert [row["key"] for row in _counted(vanishing, doomed_store)] == [doomed_store.gone]
