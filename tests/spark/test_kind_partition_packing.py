"""Offloads of the registered kinds (MapFile ledgers here) packed into few
partitions (issue 42 item 5): as Spark packs small files, up to
``bytesPerPartition`` with an open cost per offload, each partition naming
its offloads by their locators alone, read entry for entry as a partition
per ledger read them."""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.errors import NotFoundError
from offload_core.formats import pulsar_v1 as v1
from offload_core.memory import MemoryDriver
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from offload_core.offload.mapfile.mapfile_stored import MAPFILE_LEDGERS
from offload_core.offload.stored.kinds import LocatableKind
from offload_core.spark import plan_partitions
from offload_core.spark.column_bounds import ColumnBounds
from offload_core.spark.kind_partitions import OffloadPartition, plan_kind_partitions
from offload_core.spark.pulsar_offload import read_partition
from offload_core.spark.read_options import OPEN_COST_BYTES as OPEN_COST
from offload_core.spark.read_options import Decode, parse_read_options
from offload_core.spark.store_tasks import Store
from tests.spark.test_jobs_over_mapfiles import MANAGED_LEDGER, entries_of, write_mapfile

LEDGERS = 10


def rows_of(url: str, plan: Sequence[Any]) -> list[tuple[int, int, bytes | None]]:
    """Ledger id, entry id and payload of every row ``plan`` reads, in order."""
    store = Store.of(url)
    return [(row[0], row[1], row[3]) for p in plan for row in read_partition(store, p, Decode.NONE)]


def ledgers_of(plan: Sequence[Any]) -> list[tuple[int, ...]]:
    """The ledgers each partition of ``plan`` reads (every one an OffloadPartition)."""
    assert all(isinstance(p, OffloadPartition) for p in plan)
    return [p.ledger_ids for p in plan]


@pytest.fixture
def mapfiles(tmp_path: Path) -> str:
    url = f"file://{tmp_path / 'hadoop'}"
    for ledger_id in range(LEDGERS):
        write_mapfile(url, ledger_id)
    return url


def test_small_ledgers_pack_into_partitions_bounded_by_bytes_and_open_cost(mapfiles: str) -> None:
    assert isinstance(MAPFILE_LEDGERS, LocatableKind)
    per_ledger = plan_partitions({"path": mapfiles, "bytesPerPartition": "1"})  # one offload each, at least
    assert ledgers_of(per_ledger) == [(n,) for n in range(LEDGERS)]
    packed = plan_partitions({"path": mapfiles, "bytesPerPartition": str(3 * OPEN_COST)})
    assert ledgers_of(packed) == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]
    default = plan_partitions({"path": mapfiles})  # 128 MiB: 32 tiny ledgers at most
    assert ledgers_of(default) == [tuple(range(LEDGERS))]
    expected = [(n, entry_id, payload) for n in range(LEDGERS) for entry_id, payload in enumerate(entries_of(n, 300))]
    assert rows_of(mapfiles, per_ledger) == rows_of(mapfiles, packed) == rows_of(mapfiles, default) == expected


def test_packed_partitions_keep_selections_bounds_uuids_and_skipped_ledgers(mapfiles: str) -> None:
    e2, e3, e6 = entries_of(2, 300), entries_of(3, 300), entries_of(6, 300)
    # Ledger 4 also offloaded as v1 objects: read from those, never twice.
    open_offloader(mapfiles, max_block_size=8192).offload(InMemoryReadHandle(4, entries_of(4, 300)), uuid.uuid4())
    options = {"path": mapfiles, "entries": "2:5-7,3:298-,4:0,8:0-", "decode": "none"}
    plan = plan_partitions(options, entry_bounds=ColumnBounds(low=6), ledger_bounds=ColumnBounds(high=7))
    assert [p.ledger_ids for p in plan if isinstance(p, OffloadPartition)] == [(2, 3)]  # 4: v1's; 8: > 7
    assert rows_of(mapfiles, plan) == [(2, 6, e2[6]), (2, 7, e2[7]), (3, 298, e3[298]), (3, 299, e3[299])]

    copy = write_mapfile(mapfiles, 6)  # a second MapFile copy of ledger 6: ledgerUuids names the first
    driver = open_driver(mapfiles)
    (first,) = [f for f in MAPFILE_LEDGERS.find(driver, "") if f.ledger_ids == (6,) and f.uuid != copy.uuid]
    (third,) = [f for f in MAPFILE_LEDGERS.find(driver, "") if f.ledger_ids == (3,)]
    named = f"2:{uuid.uuid4()},3:{third.uuid},6:{first.uuid}"
    plan = plan_partitions({**options, "entries": "2:0-,3:298-,6:0-1", "ledgerUuids": named})
    assert ledgers_of(plan) == [(3, 6)]  # 2: another uuid named; 6 once
    assert rows_of(mapfiles, plan) == [(3, 298, e3[298]), (3, 299, e3[299]), (6, 0, e6[0]), (6, 1, e6[1])]


def memory_mapfiles(count: int) -> MemoryDriver:
    """A store of ``count`` MapFile ledgers of one 100-byte entry (the
    files a real offload wrote, under new names), listed once, as planning
    lists a store."""
    template = MemoryDriver()
    metadata = v1.closed_ledger_metadata(length=100, last_entry_id=0, ctime_ms=1)
    offloader = MapFileLedgerOffloader(template)
    offloader.offload(InMemoryReadHandle(1, [b"x" * 100], metadata), uuid.UUID(int=1),
                      {"ManagedLedgerName": MANAGED_LEDGER})  # fmt: skip
    offloader.close()
    files = [(info.key.rsplit("/", 1)[1], template.read(info.key)) for info in template.list("")]
    store = MemoryDriver()
    for ledger_id in range(count):
        directory = f"{MANAGED_LEDGER}/{ledger_id}-{uuid.uuid4()}"
        for name, data in files:
            store.write(f"{directory}/{name}", [data])
    return store


def test_a_plan_holds_under_100_bytes_a_ledger_pickled_at_10000_ledgers() -> None:
    """Each MapFile ledger travels as its directory and id, compressed
    (about 25 bytes: the uuid's random hex does not compress below ~18),
    with a partition's own fields shared by its 31 ledgers (a few hundred
    bytes); a partition per ledger carrying its ``StoredOffload`` was
    about 970 bytes a ledger."""
    count = 10_000
    options = parse_read_options({"path": "memory://unused"})
    plan = plan_kind_partitions(options, [MAPFILE_LEDGERS], memory_mapfiles(count), skip_ledgers=set())
    # 32 open costs fill 128 MiB, so with their bytes 31 ledgers a partition: 323 tasks, not 10,000.
    assert {len(p.ledger_ids) for p in plan[:-1]} == {options.bytes_per_partition // OPEN_COST - 1}
    # In the listing's order: one managed ledger, so by the ledger ids' digits as text.
    assert [ledger for p in plan for ledger in p.ledger_ids] == sorted(range(count), key=str)
    assert sum(len(pickle.dumps(p)) for p in plan) / count < 100


def test_a_directory_deleted_after_planning_fails_its_task_naming_it(mapfiles: str) -> None:
    (partition,) = plan_partitions({"path": mapfiles})
    driver = open_driver(mapfiles)
    (victim,) = [found for found in MAPFILE_LEDGERS.find(driver, "") if found.ledger_ids == (3,)]
    MAPFILE_LEDGERS.delete(driver, victim)
    rows = read_partition(Store.of(mapfiles), partition, Decode.NONE)
    with pytest.raises(NotFoundError, match=f"{victim.detail.directory}' is no longer in the store"):
        for _ in rows:
            pass


def test_two_complete_mapfile_copies_of_a_ledger_are_refused_unless_ledger_uuids_names_one(tmp_path: Path) -> None:
    from offload_core.errors import ConfigError

    url = f"file://{tmp_path / 'hadoop'}"
    first, second = write_mapfile(url, 6), write_mapfile(url, 6)  # an abandoned offload's, and the retry's
    write_mapfile(url, 7)
    uuids = ", ".join(sorted([first.uuid, second.uuid]))
    with pytest.raises(ConfigError, match=rf"2 complete copies of ledger 6 \(uuids {uuids}\).*ledgerUuids"):
        plan_partitions({"path": url})
    named = plan_partitions({"path": url, "ledgerUuids": f"6:{second.uuid}"})  # only the offloads named are read
    assert [ledger for p in named if isinstance(p, OffloadPartition) for ledger in p.ledger_ids] == [6]
    assert plan_partitions({"path": url, "ledgers": "7"})  # a wanted ledger with one copy reads as before
