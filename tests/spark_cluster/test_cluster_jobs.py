"""The backfill, verify and retention jobs on a real standalone cluster,
over a filesystem store and an S3 (moto) one whose credentials reach the
executors as options only."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import Broker, ReadPriority, TopicName, parse_config
from offload_core.model import Position
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.spark import backfill, retention, verify_store
from tests.emulators import MotoS3

pytestmark = [pytest.mark.spark, pytest.mark.emulator]

CONFIG = parse_config({"managedLedgerMaxEntriesPerLedger": 40, "managedLedgerOffloadMaxBlockSizeInBytes": 2048})
TOPIC = "persistent://public/default/orders"
CUTOFF = datetime(2026, 6, 1, tzinfo=UTC)
OLD_MS = int(datetime(2026, 1, 15, tzinfo=UTC).timestamp() * 1000)
NEW_MS = int(datetime(2026, 9, 1, tzinfo=UTC).timestamp() * 1000)


def test_backfill_verify_and_retention_on_a_filesystem_store(cluster_spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Broker(data, CONFIG) as broker:
        ledger = broker.topic(TOPIC)
        for n in range(280):  # 7 ledgers, sealed when the broker closes
            ledger.append(b"order %d " % n * (n % 5 + 1))
    result = backfill(cluster_spark, data, config=CONFIG)
    assert len(result.offloaded) == 7 and not result.failed
    with Broker(data, CONFIG) as broker:
        topic = broker.topic(TopicName.parse(TOPIC))
        first = topic.ledgers()[0].ledger_id
        entries = topic.read(Position(first, 0), 280, priority=ReadPriority.OFFLOADED_ONLY)
        assert [entry.data for entry in entries] == [b"order %d " % n * (n % 5 + 1) for n in range(280)]

    url = f"file://{data / 'bucket'}"
    verified = verify_store(cluster_spark, url)
    assert verified.ok and len(verified.reports) == 7 and verified.defects.count() == 0
    # Sealed today: a cut-off in the future takes them all.
    gone = retention(cluster_spark, url, cutoff=datetime(2100, 1, 1, tzinfo=UTC), dry_run=False)
    assert [decision.action for decision in gone.decisions] == ["deleted"] * 7
    assert find_offloaded_ledgers(open_driver(url)) == []


def test_backfill_to_s3_with_credentials_as_options_then_verify_and_read_back(
    cluster_spark: Any, s3: MotoS3, tmp_path: Path
) -> None:
    options = s3.client_options()
    secrets = {"access_key_id": "AKIACLUSTERBACKFILL", "secret_access_key": "cluster-backfill-secret"}
    config = parse_config({
        "managedLedgerMaxEntriesPerLedger": 40, "managedLedgerOffloadDriver": "aws-s3",
        "managedLedgerOffloadBucket": "offload-test", "managedLedgerOffloadServiceEndpoint": s3.endpoint,
        "managedLedgerOffloadRegion": "us-east-1", "managedLedgerOffloadMaxBlockSizeInBytes": 5 * 2**20,
    })  # fmt: skip
    data = tmp_path / "data"
    with Broker(data, config) as broker:
        for n in range(120):  # 3 ledgers, sealed when the broker closes
            broker.topic(TOPIC).append(b"order %d " % n * (n % 5 + 1))
    result = backfill(cluster_spark, data, config=config, driver_options=secrets)
    assert len(result.offloaded) == 3 and not result.failed, result.ledgers
    recorded = (data / "metadata.db").read_bytes()
    assert s3.endpoint.encode() in recorded and not any(secret.encode() in recorded for secret in secrets.values())

    url, reader = "s3://offload-test", {**options, **secrets}
    verified = verify_store(cluster_spark, url, driver_options=reader)
    assert verified.ok and [report.entries for report in verified.reports] == [40, 40, 40]
    read = (cluster_spark.read.format("pulsar-offload").option("decode", "none")
            .options(**{f"driver.{name}": value for name, value in reader.items()}).load(url))  # fmt: skip
    rows = sorted((row.ledger_id, row.entry_id, bytes(row.payload)) for row in read.collect())
    assert [payload for _, _, payload in rows] == [b"order %d " % n * (n % 5 + 1) for n in range(120)]


def test_verify_and_retention_on_s3_with_credentials_as_options(cluster_spark: Any, s3: MotoS3) -> None:
    options = s3.client_options()
    url = "s3://offload-test/ledgers"
    for ledger_id, created in ((1, OLD_MS), (2, OLD_MS), (3, NEW_MS)):
        entries = [b"entry %d" % n * 40 for n in range(200)]
        metadata = v1.closed_ledger_metadata(length=sum(map(len, entries)), last_entry_id=199, ctime_ms=created)
        offloader = open_offloader(url, **options, max_block_size=5 * 2**20)
        offloader.offload(InMemoryReadHandle(ledger_id, entries, metadata), uuid.uuid4())
    verified = verify_store(cluster_spark, url, driver_options=options)
    assert verified.ok and [report.offload.ledger_ids for report in verified.reports] == [(1,), (2,), (3,)]
    assert all(report.entries == 200 for report in verified.reports)
    done = retention(cluster_spark, url, cutoff=CUTOFF, driver_options=options, dry_run=False)
    assert [(d.offload.ledger_ids, d.action) for d in done.decisions] == [
        ((1,), "deleted"),
        ((2,), "deleted"),
        ((3,), "keep"),
    ]
    keys = [item["Key"] for item in s3.client().list_objects_v2(Bucket="offload-test")["Contents"]]
    assert len(keys) == 2 and all("-ledger-3" in key for key in keys)


def test_a_relative_store_url_names_the_drivers_directory_on_every_executor(
    cluster_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for ledger_id in (1, 2):
        metadata = v1.closed_ledger_metadata(length=30, last_entry_id=9, ctime_ms=OLD_MS)
        offloader = open_offloader(f"file://{tmp_path / 'store'}", max_block_size=1024)
        offloader.offload(InMemoryReadHandle(ledger_id, [b"entry"] * 6 + [b"x" * 0] * 4, metadata), uuid.uuid4())
    monkeypatch.chdir(tmp_path)
    verified = verify_store(cluster_spark, "file://store")
    assert verified.ok and [report.offload.ledger_ids for report in verified.reports] == [(1,), (2,)]
    done = retention(cluster_spark, "file://store", cutoff=CUTOFF, dry_run=False)
    assert [decision.action for decision in done.decisions] == ["deleted", "deleted"]
    assert find_offloaded_ledgers(open_driver(f"file://{tmp_path / 'store'}")) == []
