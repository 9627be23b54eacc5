"""What planning a read of MapFile ledgers holds on the Spark driver
(issue 42): beyond the plan it returns, the listing kept for the kinds
(``ListedOnce``: a MapFile key in some 25 bytes, deflated)."""

from __future__ import annotations

import gc
import os
import tracemalloc
import uuid
from pathlib import Path

from offload_core.plugins import open_driver
from offload_core.spark.planning_reads import ListedOnce
from tests.spark.test_jobs_over_mapfiles import MANAGED_LEDGER


def test_the_listing_kept_holds_a_mapfile_key_in_under_40_bytes(tmp_path: Path) -> None:
    """Each listed key (a new string from the filesystem driver) and its
    size: a list of strings held the key itself, some 130 bytes, and its
    reference, measured here on that code (about 140 in all)."""
    count = 3_000
    for ledger_id in range(count):
        directory = tmp_path / MANAGED_LEDGER / f"{ledger_id}-{uuid.uuid4()}"
        os.makedirs(directory)
        (directory / "data").write_bytes(b"")
        (directory / "index").write_bytes(b"")
    driver = open_driver(f"file://{tmp_path}")
    listed: ListedOnce[None] = ListedOnce(driver)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        keys = sum(1 for _ in listed.list(""))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert keys == 2 * count
    assert (held - before) / keys < 40
    assert list(listed.list(f"{MANAGED_LEDGER}/1")) == list(driver.list(f"{MANAGED_LEDGER}/1"))
