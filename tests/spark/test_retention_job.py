"""retention on Spark: old ledgers deleted (dry-run by default), orphans found."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import Broker, SqliteMetadataStore, parse_config
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.spark import backfill, store_tasks
from offload_core.spark.retention_job import retention

pytestmark = pytest.mark.spark

CUTOFF = datetime(2026, 6, 1, tzinfo=UTC)
OLD_MS = int(datetime(2026, 1, 15, tzinfo=UTC).timestamp() * 1000)
NEW_MS = int(datetime(2026, 9, 1, tzinfo=UTC).timestamp() * 1000)


def offload(url: str, ledger_id: int, created_ms: int) -> str:
    entries = [b"entry %d" % n for n in range(30)]
    metadata = v1.closed_ledger_metadata(length=sum(map(len, entries)), last_entry_id=29, ctime_ms=created_ms)
    uid = uuid.uuid4()
    open_offloader(url, max_block_size=1024).offload(InMemoryReadHandle(ledger_id, entries, metadata), uid)
    return str(uid)


def remaining(url: str) -> set[int]:
    return {ledger.ledger_id for ledger in find_offloaded_ledgers(open_driver(url))}


def test_dry_run_by_default_then_old_ledgers_go(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    for ledger_id in (1, 2, 3):
        offload(url, ledger_id, OLD_MS)
    for ledger_id in (4, 5):
        offload(url, ledger_id, NEW_MS)
    dry = retention(spark, url, cutoff=CUTOFF)
    assert dry.dry_run and remaining(url) == {1, 2, 3, 4, 5}
    assert [(d.offload.ledger_ids[0], d.action) for d in dry.decisions] == [
        (1, "delete"), (2, "delete"), (3, "delete"), (4, "keep"), (5, "keep")
    ]  # fmt: skip
    assert {row.orphan for row in dry.actions.collect()} == {None}  # unknown without metadata
    done = retention(spark, url, cutoff=CUTOFF, dry_run=False)
    assert [row.action for row in done.actions.orderBy("ledger_ids").collect()] == [
        "deleted", "deleted", "deleted", "keep", "keep"
    ]  # fmt: skip
    assert remaining(url) == {4, 5}
    assert [key.endswith("-index") for key in done.decisions[0].keys] == [False, True]


def test_with_metadata_referenced_ledgers_stay_and_orphans_are_found(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 10})
    with Broker(data, config) as broker:
        ledger = broker.topic("persistent://public/default/kept")
        for n in range(30):
            ledger.append(b"m%d" % n)
        ledger.offload_prefix()
    url = f"file://{data / 'bucket'}"
    referenced = remaining(url)
    assert len(referenced) == 3
    offload(url, 900, OLD_MS)  # an old orphan
    offload(url, 901, NEW_MS)  # a young orphan
    half = offload(url, 902, OLD_MS)  # an orphan whose index is gone (an interrupted offload)
    open_driver(url).delete(v1.index_key(half, 902))
    store = SqliteMetadataStore(data / "metadata.db")
    try:
        result = retention(spark, url, cutoff=datetime(2100, 1, 1, tzinfo=UTC), metadata=store, dry_run=False)
        assert sorted(d.offload.ledger_ids[0] for d in result.orphans) == [900, 901, 902]
        kept = {d.offload.ledger_ids[0]: d.reason for d in result.decisions if d.action == "keep"}
        assert set(kept) == referenced | {902}
        assert all("public/default/persistent/kept" in kept[ledger_id] for ledger_id in referenced)
        assert remaining(url) == referenced | {902}
        retention(spark, url, cutoff=CUTOFF, metadata=store, delete_orphans=True, dry_run=False)
        assert remaining(url) == referenced
    finally:
        store.close()


def test_a_naive_cutoff_is_refused(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        retention(spark, f"file://{tmp_path}", cutoff=datetime(2026, 1, 1))


def test_a_ledger_whose_deletion_fails_is_reported_and_the_others_go(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    for ledger_id in (1, 2):
        offload(url, ledger_id, OLD_MS)
    real = store_tasks.run_with_progress

    def first_delete_fails(spark: Any, description: str, action: Any, report: Any = None) -> Any:
        outcome = real(spark, description, action, report)
        if description.startswith("retention: deleting"):
            return ["AccessDeniedError: not allowed", *outcome[1:]]
        return outcome

    monkeypatch.setattr(store_tasks, "run_with_progress", first_delete_fails)
    result = retention(spark, url, cutoff=CUTOFF, dry_run=False)
    assert [(d.offload.ledger_ids[0], d.action) for d in result.decisions] == [(1, "failed"), (2, "deleted")]
    assert "deleting failed: AccessDeniedError" in result.decisions[0].reason


def test_backfilled_ledgers_are_aged_by_when_they_were_sealed(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 10})
    sealed_at = OLD_MS / 1000
    with Broker(data, config, clock=lambda: sealed_at) as broker:
        ledger = broker.topic("persistent://public/default/old")
        for n in range(30):
            ledger.append(b"m%d" % n)  # three ledgers, each sealed as it fills
    backfill(spark, data, config=config)  # offloaded today
    plan = retention(spark, f"file://{data / 'bucket'}", cutoff=CUTOFF)
    assert [(d.created_ms, d.action) for d in plan.decisions] == [(OLD_MS, "delete")] * 3
