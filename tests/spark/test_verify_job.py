"""The verify job on Spark: every block checked in parallel, defects as a DataFrame."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.formats import pulsar_v1 as v1
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.spark.progress import Progress
from offload_core.spark.verify_job import verify_store
from tests.emulators import MotoS3

pytestmark = pytest.mark.spark


@pytest.fixture
def store(tmp_path: Path) -> str:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=4096)
    rng = random.Random(7)
    for ledger_id in range(1, 6):
        entries = [rng.randbytes(rng.randrange(1, 500)) for _ in range(60)]
        offloader.offload(InMemoryReadHandle(ledger_id, entries), uuid.uuid4())
    return url


def test_a_good_store_has_no_defects_and_progress_is_reported(spark: Any, store: str) -> None:
    seen: list[Progress] = []
    result = verify_store(spark, store, progress=seen.append)
    assert result.ok and result.defects.count() == 0
    assert [report.offload.ledger_ids[0] for report in result.reports] == [1, 2, 3, 4, 5]
    assert all(report.entries == 60 and report.blocks > 1 for report in result.reports)
    finals = [p for p in seen if p.description == "verify: checking blocks"]
    assert finals and finals[-1].done == finals[-1].total > 0


def test_a_corrupted_block_is_reported_with_its_ledger_and_offset(spark: Any, store: str) -> None:
    driver = open_driver(store)
    ledger = next(ledger for ledger in find_offloaded_ledgers(driver) if ledger.ledger_id == 3)
    index = v1.decode_index(driver.read(ledger.index_key))
    victim = index.entries[1]
    data = bytearray(driver.read(ledger.data_key))
    data[victim.offset + 2] ^= 0xFF  # inside the block header's magic word
    driver.write(ledger.data_key, bytes(data), metadata=dict(driver.stat(ledger.data_key).metadata))
    result = verify_store(spark, store)
    defects = result.defects.collect()
    assert [(row.ledger_id, row.key, row.offset) for row in defects] == [
        (3, ledger.data_key, victim.offset),
        (3, ledger.data_key, None),
    ]
    last = index.metadata().lastEntryId
    assert (
        defects[1].problem
        == f"recoverable entries 0..{victim.first_entry_id - 1}, lost {victim.first_entry_id}..{last}"
    )
    assert not result.ok


def test_missing_objects_and_selection(spark: Any, store: str) -> None:
    driver = open_driver(store)
    ledger = next(ledger for ledger in find_offloaded_ledgers(driver) if ledger.ledger_id == 2)
    driver.delete(ledger.index_key)
    result = verify_store(spark, store, ledgers=[2, 4])
    assert [report.offload.ledger_ids[0] for report in result.reports] == [2, 4]
    assert [(row.ledger_id, row.problem) for row in result.defects.collect()] == [(2, "index object is missing")]


@pytest.mark.emulator
def test_executors_verify_a_bucket_on_s3(spark: Any, s3: MotoS3) -> None:
    options = s3.client_options()
    offloader = open_offloader("s3://offload-test/verify", **options, max_block_size=5 * 2**20)
    for ledger_id in (1, 2, 3):
        entries = [bytes([n % 251]) * (n * 997 % 40_000) for n in range(300)]
        offloader.offload(InMemoryReadHandle(ledger_id, entries), uuid.uuid4())
    result = verify_store(spark, "s3://offload-test/verify", driver_options=options)
    assert result.ok and [r.offload.ledger_ids[0] for r in result.reports] == [1, 2, 3]
    assert all(report.blocks > 1 for report in result.reports)
