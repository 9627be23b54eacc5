"""backfill on Spark: tasks write objects, the driver completes each ledger; then verify."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offload_core import open_driver
from offload_core.errors import NotFoundError
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import Broker, ReadPriority, SqliteMetadataStore, TopicName, parse_config
from offload_core.model import Position
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.spark import backfill_job
from offload_core.spark.backfill_job import backfill
from offload_core.spark.progress import Progress
from offload_core.spark.retention_job import retention
from offload_core.spark.verify_job import verify_store

pytestmark = pytest.mark.spark

TOPICS = ["persistent://public/default/orders", "persistent://public/default/clicks"]
CONFIG = parse_config({"managedLedgerMaxEntriesPerLedger": 40, "managedLedgerOffloadMaxBlockSizeInBytes": 2048})


def message(topic: str, n: int) -> bytes:
    return f"{topic.rsplit('/', 1)[1]} #{n} ".encode() * (n % 9 + 1)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    with Broker(tmp_path / "data", CONFIG) as broker:
        for topic in TOPICS:
            ledger = broker.topic(topic)
            for n in range(440):  # 11 sealed ledgers per topic
                ledger.append(message(topic, n))
    return tmp_path / "data"


def bucket_url(data: Path) -> str:
    return f"file://{data / 'bucket'}"


def test_backfill_then_verify_22_ledgers(spark: Any, data: Path) -> None:
    seen: list[Progress] = []
    result = backfill(spark, data, config=CONFIG, progress=seen.append)
    assert len(result.offloaded) == 22 and not result.failed
    assert seen[-1].done == seen[-1].total == 22
    assert {status.status for status in result.statuses.values()} == {"success"}
    with Broker(data, CONFIG) as broker:
        for topic in TOPICS:
            ledger = broker.topic(topic)
            first = ledger.ledgers()[0].ledger_id
            entries = ledger.read(Position(first, 0), 440, priority=ReadPriority.OFFLOADED_ONLY)
            assert [entry.data for entry in entries] == [message(topic, n) for n in range(440)]
            assert ledger.offload_status().status == "success"
    verified = verify_store(spark, bucket_url(data))
    assert len(verified.reports) == 22 and verified.defects.count() == 0

    driver = open_driver(bucket_url(data))
    ledger = find_offloaded_ledgers(driver)[13]
    index = v1.decode_index(driver.read(ledger.index_key))
    victim = index.entries[len(index.entries) // 2]
    corrupted = bytearray(driver.read(ledger.data_key))
    corrupted[victim.offset + v1.BLOCK_HEADER_LENGTH + 1] ^= 0x40  # an entry's length field
    driver.write(ledger.data_key, bytes(corrupted), metadata=dict(driver.stat(ledger.data_key).metadata))
    rows = verify_store(spark, bucket_url(data)).defects.collect()
    assert [(row.ledger_id, row.key, row.offset) for row in rows] == [
        (ledger.ledger_id, ledger.data_key, victim.offset),
        (ledger.ledger_id, ledger.data_key, None),  # the summary: which entries are recoverable
    ]
    assert rows[1].problem.startswith("recoverable entries 0..")


def test_a_ledger_that_fails_is_left_as_it_was_and_the_others_complete(spark: Any, data: Path) -> None:
    victim = data / "ledgers"
    hot_files = sorted(victim.glob("*.log"), key=lambda path: int(path.stem))
    broken = hot_files[3]
    with open(broken, "r+b") as handle:
        handle.seek(os.path.getsize(broken) - 3)
        handle.write(b"\xff\xff\xff")  # the last entry's payload no longer matches its checksum
    result = backfill(spark, data, config=CONFIG)
    assert [outcome.ledger_id for outcome in result.failed] == [int(broken.stem)]
    assert "FormatError" in (result.failed[0].error or "")
    assert len(result.offloaded) == 21
    failing_topic = result.failed[0].topic
    assert result.statuses[failing_topic].status == "error"
    offloaded = {ledger.ledger_id for ledger in find_offloaded_ledgers(open_driver(bucket_url(data)))}
    assert int(broken.stem) not in offloaded and len(offloaded) == 21
    with Broker(data, CONFIG) as broker:
        assert int(broken.stem) in broker.topic(failing_topic).offloadable_ledgers()


def test_when_the_job_fails_every_prepared_offload_is_abandoned(
    spark: Any, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run_then_fail(spark: Any, description: str, action: Any, report: Any = None) -> Any:
        action()  # the objects are written ...
        raise RuntimeError("driver lost contact with the cluster")  # ... and then the job fails

    monkeypatch.setattr(backfill_job, "run_with_progress", run_then_fail)
    with pytest.raises(RuntimeError, match="lost contact"):
        backfill(spark, data, config=CONFIG, topics=TOPICS[:1])
    assert find_offloaded_ledgers(open_driver(bucket_url(data))) == []
    with Broker(data, CONFIG) as broker:
        assert len(broker.topic(TOPICS[0]).offloadable_ledgers()) == 11


def test_an_unknown_topic_is_an_error_and_nothing_is_created(spark: Any, data: Path) -> None:
    with pytest.raises(NotFoundError, match="no topic public/default/typo"):
        backfill(spark, data, config=CONFIG, topics=["public/default/typo", TOPICS[0]])
    assert find_offloaded_ledgers(open_driver(bucket_url(data))) == []
    with Broker(data, CONFIG) as broker:
        assert sorted(map(str, broker.topics())) == sorted(str(TopicName.parse(t)) for t in TOPICS)


def test_a_streaming_topic_is_backfilled_in_segments(spark: Any, data: Path) -> None:
    streaming = {"managedLedgerOffloadStreamingEnabled": True, "maxSizePerOffloadSegmentMbytes": 1}
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 40, "managedLedgerOffloadMaxBlockSizeInBytes": 2048,
                           **streaming})  # fmt: skip
    result = backfill(spark, data, config=config)
    assert result.ledgers == [] and result.segments and not result.failed_segments
    assert {status.status for status in result.statuses.values()} == {"success"}
    with Broker(data, config) as broker:
        for topic in TOPICS:
            ledger = broker.topic(topic)
            assert {s.status for s in ledger.segments()} == {"complete"}
            first = ledger.ledgers()[0].ledger_id
            entries = ledger.read(Position(first, 0), 440, priority=ReadPriority.OFFLOADED_ONLY)
            assert [entry.data for entry in entries] == [message(topic, n) for n in range(440)]
    rows = spark.read.format("pulsar-offload").option("decode", "none").load(bucket_url(data)).count()
    assert rows == 2 * 440
    verified = verify_store(spark, bucket_url(data))
    assert verified.ok and {r.offload.uuid for r in verified.reports} == {s.uuid for s in result.segments}
    assert sum(report.entries for report in verified.reports) == 2 * 440
    store = SqliteMetadataStore(data / "metadata.db")
    try:
        kept = retention(spark, bucket_url(data), cutoff=datetime(2999, 1, 1, tzinfo=UTC), metadata=store,
                         delete_orphans=True, dry_run=False)  # fmt: skip
    finally:
        store.close()
    assert len(kept.decisions) == len(result.segments) and not kept.orphans  # every segment is its topic's
    assert {d.action for d in kept.decisions} == {"keep"}
