"""failOnDataLoss through a real Spark query: a segment deleted between
planning and reading fails the query naming it, or is skipped and counted
on the driver by skipped_objects (a batch read's and a stream's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PythonException

from offload_core.errors import ConfigError
from offload_core.spark import skipped_objects
from offload_core.spark.data_loss import CAPTURE_CONF
from tests.spark.test_kafka_remote_options import _copied

pytestmark = pytest.mark.spark


def _planned_then_lost(spark: Any, tmp_path: Path, url: str, **options: str) -> tuple[Any, str]:
    """A kafka-remote read of orders-0 whose first segment's .log is deleted once the read is planned."""
    frame = spark.read.format("kafka-remote").options(url=url, prefix="tiered", topic="orders", **options).load()
    # Planning the physical plan lists the segments; the action then runs this plan, not a new one.
    frame._jdf.queryExecution().executedPlan()
    first = min((tmp_path / "store").rglob("*.log"))
    first.unlink()
    return frame, str(first.relative_to(tmp_path / "store"))


def test_a_segment_gone_between_planning_and_reading_is_skipped_and_counted(collecting: Any, tmp_path: Path) -> None:
    url, _, _ = _copied(tmp_path)
    frame, lost = _planned_then_lost(collecting, tmp_path, url, failOnDataLoss="false")
    assert sorted(row.offset for row in frame.select("offset").collect()) == list(range(100, 200))
    skipped = skipped_objects(collecting).where(f"store = '{url}'")
    assert skipped.count() == 1
    (row,) = skipped.drop("ts", "message").collect()
    assert row.asDict() == {"source": "kafka-remote", "store": url, "key": lost, "topic": "orders", "partition": 0,
                            "first_offset": 0, "last_offset": 99, "reason": "vanished", "ledger_id": None,
                            "first_entry": None, "last_entry": None}  # fmt: skip


def test_a_segment_gone_between_planning_and_reading_fails_the_query_naming_it(collecting: Any, tmp_path: Path) -> None:
    frame, lost = _planned_then_lost(collecting, tmp_path, _copied(tmp_path)[0])
    with pytest.raises(PythonException, match=f"{lost} .offsets 0 to 99. vanished .*failOnDataLoss=false"):
        frame.collect()


def stream_losing_a_segment(spark: Any, tmp_path: Path) -> tuple[str, str, list[int]]:
    """A kafka-remote readStream (failOnDataLoss=false, trigger availableNow) of orders-0, whose first
    segment's .log is deleted once the first micro-batch is planned: the store's URL, the lost key and
    the offsets the query read."""
    url, _, _ = _copied(tmp_path)
    frame = (spark.readStream.format("kafka-remote").options(url=url, prefix="tiered", subscribe="orders")
             .options(startingOffsets="earliest", failOnDataLoss="false").load())  # fmt: skip
    offsets: list[int] = []
    lost: list[str] = []

    def lose_then_read(batch: Any, _: int) -> None:
        # The micro-batch's partitions are planned with its physical plan; the action then runs this plan.
        batch._jdf.queryExecution().executedPlan()
        if not lost:
            first = min((tmp_path / "store").rglob("*.log"))
            lost.append(str(first.relative_to(tmp_path / "store")))
            first.unlink()
        offsets.extend(row.offset for row in batch.select("offset").collect())

    query = (frame.writeStream.foreachBatch(lose_then_read).option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())  # fmt: skip
    query.awaitTermination()
    return url, lost[0], offsets


def test_a_stream_skips_a_segment_gone_after_planning_and_counts_it(collecting: Any, tmp_path: Path) -> None:
    url, lost, offsets = stream_losing_a_segment(collecting, tmp_path)
    assert sorted(offsets) == list(range(100, 200))
    (row,) = skipped_objects(collecting).where(f"store = '{url}'").drop("ts", "message").collect()
    assert row.asDict() == {"source": "kafka-remote", "store": url, "key": lost, "topic": "orders", "partition": 0,
                            "first_offset": 0, "last_offset": 99, "reason": "vanished", "ledger_id": None,
                            "first_entry": None, "last_entry": None}  # fmt: skip


def test_skipped_objects_refuses_a_session_that_does_not_collect_its_workers_logs(spark: Any) -> None:
    with pytest.raises(ConfigError, match=f"set {CAPTURE_CONF}=true"):
        skipped_objects(spark)


def test_a_skip_in_a_task_a_limit_stops_early_is_counted(collecting: Any, tmp_path: Path) -> None:
    # The task skips the first segment, then a limit has its rows from the second: Spark stops the
    # task before its end, where its accumulator updates would have been sent.
    url, _, _ = _copied(tmp_path)
    frame, lost = _planned_then_lost(collecting, tmp_path, url, failOnDataLoss="false")
    assert len(frame.select("offset").limit(5).collect()) == 5
    skipped = skipped_objects(collecting).where(f"store = '{url}'")
    assert [row.key for row in skipped.collect()] == [lost]
