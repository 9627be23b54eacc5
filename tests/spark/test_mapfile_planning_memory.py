"""What planning a read of MapFile ledgers holds on the Spark driver
(issue 42): beyond the plan it returns, the listing kept for the kinds
(``ListedOnce``: a MapFile key in some 25 bytes, deflated) and a ledger
id each, the directories summed up as the listing passes them."""

from __future__ import annotations

import gc
import os
import pickle
import tracemalloc
import uuid
from pathlib import Path

from offload_core.offload.mapfile.mapfile_stored import MAPFILE_LEDGERS
from offload_core.plugins import open_driver
from offload_core.spark.kind_partitions import plan_kind_partitions
from offload_core.spark.planning_reads import ListedOnce
from offload_core.spark.read_options import parse_read_options
from tests.spark.test_jobs_over_mapfiles import MANAGED_LEDGER
from tests.spark.test_kind_partition_packing import memory_mapfiles


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


def test_planning_mapfile_ledgers_holds_their_plan_and_an_id_each_beyond_the_listing() -> None:
    """The partitions (some 45 bytes a ledger in Python), each planned
    ledger's id (8 bytes) and a block of keys inflated at a time. Every
    directory was held until the listing ended, to give them in ledger-id
    order: about 240 bytes a ledger at the peak, measured here on that
    code."""
    count = 10_000
    options = parse_read_options({"path": "memory://unused"})
    # A first planning in a process imports modules on first use (some 20 MB traced): done before measuring.
    plan_kind_partitions(options, [MAPFILE_LEDGERS], ListedOnce(memory_mapfiles(2)), skip_ledgers=set())
    store: ListedOnce[None] = ListedOnce(memory_mapfiles(count))
    assert sum(1 for _ in store.list("")) == 2 * count  # listed before, as planning's first listing does
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        plan = plan_kind_partitions(options, [MAPFILE_LEDGERS], store, skip_ledgers=set())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sorted(ledger for p in plan for ledger in p.ledger_ids) == list(range(count))
    assert sum(len(pickle.dumps(p)) for p in plan) / count < 45
    assert (peak - before) / count < 120
