"""Small whole-ledger offloads packed into one ``pulsar-offload`` partition
(issue 42 item 5): planning reads no index of theirs, a partition holds
at most ``bytesPerPartition`` of them counted with Spark's open cost, its
pickled bytes are about a key a ledger, and its task reads exactly what
the ledgers cut into block ranges on the driver read."""

from __future__ import annotations

import pickle
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.errors import FormatError, NotFoundError
from offload_core.formats import pulsar_v1 as v1
from offload_core.offload.ledgers.inventory import LedgerCopy
from offload_core.spark import BlockRangePartition, plan_partitions
from offload_core.spark.column_bounds import ANY_VALUE
from offload_core.spark.ledger_groups import WHOLE, LedgerGroupPartition, PackedKeys, packed_groups
from offload_core.spark.pulsar_offload import read_partition, read_partition_batches
from offload_core.spark.read_options import OPEN_COST_BYTES as OPEN_COST
from offload_core.spark.read_options import Decode
from offload_core.spark.store_tasks import Store

ARROW = pa.schema([("ledger_id", pa.int64()), ("entry_id", pa.int64()), ("payload", pa.binary())])


@pytest.mark.parametrize("keys", [[], [""], ["a"], ["x/é-ledger-1", "", "b" * 300, "ledger"]])
def test_packed_keys_give_back_the_keys_in_order(keys: list[str]) -> None:
    packed = PackedKeys.of(keys)
    assert list(packed) == keys and len(packed) == len(keys)
    assert list(pickle.loads(pickle.dumps(packed))) == keys


_UID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"


@pytest.mark.parametrize(
    "keys",
    [
        [f"{_UID}-ledger-0", f"t/ns/é/{_UID}-ledger-{2**64 - 1}", _UID, f"p/{_UID}", f"{_UID}-index"],
        # Keys a listing may hold that must not be taken for what they resemble: as plain strings.
        [f"{_UID.upper()}-ledger-1", f"{_UID}-ledger-01", f"{_UID}-ledger-{2**64}", f"{_UID}-ledger-",
         f"{_UID}-ledger-1x", f"{_UID[:-1]}-ledger-1", f"{_UID}x", "x" + _UID[1:] + "-ledger-3",
         f"{_UID}\n", f"{_UID}-ledger-2\n"],
    ],
)  # fmt: skip
def test_packed_keys_give_back_keys_ending_in_a_uuid_exactly(keys: list[str]) -> None:
    packed = PackedKeys.of(keys)
    assert list(packed) == keys
    assert list(pickle.loads(pickle.dumps(packed))) == keys


def _copies(count: int, size: int) -> list[tuple[LedgerCopy, tuple[tuple[int, int | None], ...]]]:
    copies = []
    for ledger_id in range(count):
        key = "tenant/ns/" + v1.data_key(str(uuid.uuid4()), 10**6 + ledger_id)
        copies.append((LedgerCopy(key, 10**6 + ledger_id, len("tenant/ns/"), size), WHOLE))
    return copies


def test_groups_hold_what_fits_the_budget_with_the_open_cost_in_ledger_order() -> None:
    copies = _copies(100, 10_000)
    groups = list(packed_groups(copies, 128 * 2**20))
    fits = 128 * 2**20 // (10_000 + OPEN_COST)
    assert [len(group.data_keys) for group in groups] == [fits, fits, fits, 100 - 3 * fits]
    assert [key for group in groups for key in group.data_keys] == [copy.data_key for copy, _ in copies]
    assert [ledger for group in groups for _, ledger, _ in group.ledgers()] == [c.ledger_id for c, _ in copies]
    # A ledger larger than the budget is still one partition's.
    big = list(packed_groups(_copies(3, 10**9), 128 * 2**20))
    assert [len(group.data_keys) for group in big] == [1, 1, 1]


def test_a_plan_of_ten_thousand_small_ledgers_pickles_to_about_a_key_each() -> None:
    copies = _copies(10_000, 5_000)
    groups = list(packed_groups(copies, 128 * 2**20))
    pickled = sum(len(pickle.dumps(group)) for group in groups)
    key = len(copies[0][0].data_key)
    # Each key's prefix, then its uuid and ledger id as 24 bytes and a mark (as plain text, a 61-byte
    # key here: 74 bytes a ledger pickled; 48 now), its 4-byte end, and a partition's own pickle spread
    # over its 31 ledgers (a block-range partition a ledger pickled to about 440 bytes: 4.4 MB per 10,000).
    assert key == 61 and pickled / len(copies) < 10 + 25 + 4 + 16
    assert len(groups) == -(-10_000 // (128 * 2**20 // (5_000 + OPEN_COST)))


def _store(tmp_path: Path) -> str:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=2048)
    for ledger_id in range(1, 9):
        payloads = [f"{ledger_id}:{entry}".encode() * (1 + entry % 9) for entry in range(40 * ledger_id)]
        offloader.offload(InMemoryReadHandle(ledger_id, payloads), uuid.uuid4())
    return url


@pytest.mark.parametrize(
    "options",
    [{}, {"entries": "2:5-30,3:0,5:60-", "ledgers": "7"}, {"ledgers": "4,6"}],
)
def test_a_packed_partition_reads_what_block_ranges_cut_on_the_driver_read(
    tmp_path: Path, options: dict[str, str]
) -> None:
    url = _store(tmp_path)
    store = Store.of(url)
    packed = plan_partitions({"path": url, **options})
    cut = plan_partitions({"path": url, "blocksPerPartition": "1", **options})
    assert packed and all(isinstance(p, LedgerGroupPartition) for p in packed)
    assert all(isinstance(p, BlockRangePartition) for p in cut)

    # Packed groups come in the listing's order (the ledgers' uuids'), cut ledgers in ledger order.
    def position(row: tuple[int, ...] | dict[str, int]) -> tuple[int, int]:
        return (row["ledger_id"], row["entry_id"]) if isinstance(row, dict) else (row[0], row[1])

    for decode in (Decode.NONE, Decode.AUTO):
        rows = [row for p in packed for row in read_partition(store, p, decode)]
        expected_rows = [row for p in cut for row in read_partition(store, p, decode)]
        assert rows and sorted(rows, key=position) == expected_rows
    batches = [row for p in packed for b in read_partition_batches(store, p, ARROW, 50) for row in b.to_pylist()]
    expected = [row for p in cut for b in read_partition_batches(store, p, ARROW, 50) for row in b.to_pylist()]
    assert sorted(batches, key=position) == expected


def test_pushed_entry_bounds_prune_in_the_task(tmp_path: Path) -> None:
    from offload_core.spark.column_bounds import ColumnBounds

    url = _store(tmp_path)
    bounds = ColumnBounds(low=100, high=120)
    (group,) = plan_partitions({"path": url}, entry_bounds=bounds)
    assert isinstance(group, LedgerGroupPartition) and group.entry_bounds == bounds
    rows = list(read_partition(Store.of(url), group, Decode.NONE))
    expected = [(ledger, entry) for ledger in range(3, 9) for entry in range(100, min(121, 40 * ledger))]
    assert sorted((row[0], row[1]) for row in rows) == expected
    assert plan_partitions({"path": url}, entry_bounds=ANY_VALUE)[0].entry_bounds == ANY_VALUE


def test_a_ledger_larger_than_the_budget_is_cut_on_the_driver_after_the_packed_ones(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=2048)
    for ledger_id, count in [(1, 10), (2, 10), (3, 400), (4, 10)]:  # ledger 3: 40,000 bytes
        offloader.offload(InMemoryReadHandle(ledger_id, [b"p" * 100] * count), uuid.uuid4())
    plan = plan_partitions({"path": url, "bytesPerPartition": str(8 * 2048)})
    shapes = [(type(p).__name__, getattr(p, "ledger_id", None)) for p in plan]
    # Spark's open cost (4 MiB) alone exceeds this budget: a small ledger a partition, as in Spark; the
    # small ones packed as the listing comes, the large one cut from its index once it is done.
    packed = ("LedgerGroupPartition", None)
    cut = shapes[3:]
    assert shapes[:3] == [packed] * 3 and set(cut) == {("BlockRangePartition", 3)} and len(cut) > 2
    rows = [row[:2] for p in plan for row in read_partition(Store.of(url), p, Decode.NONE)]
    counts = [(1, 10), (2, 10), (3, 400), (4, 10)]
    assert sorted(rows) == [(ledger, entry) for ledger, count in counts for entry in range(count)]
    assert rows[-400:] == [(3, entry) for entry in range(400)]


def test_an_index_gone_or_damaged_after_planning_is_named(tmp_path: Path) -> None:
    url = _store(tmp_path)
    (group,) = plan_partitions({"path": url})
    keys = list(group.data_keys)
    driver = open_driver(url)
    driver.write(keys[2] + "-index", [b"not an index"])
    with pytest.raises(FormatError, match=f"{keys[2]}-index: "):
        list(read_partition(Store.of(url), group, Decode.NONE))
    driver.delete([keys[4] + "-index"])
    with pytest.raises(NotFoundError, match=f"{keys[4]}-index"):
        list(read_partition(Store.of(url), LedgerGroupPartition(PackedKeys.of(keys[4:])), Decode.NONE))


def test_ledger_ids_answer_membership_after_any_add() -> None:
    from offload_core.spark.whole_ledger_planning import LedgerIds

    ids = LedgerIds()
    for ledger_id in [5, 2**40, 3, 5, 0]:
        ids.add(ledger_id)
    assert 5 in ids and 2**40 in ids and 0 in ids and 4 not in ids and 2**41 not in ids
    ids.add(4)
    assert 4 in ids and sorted(ids) == [0, 3, 4, 5, 2**40]


def test_a_packed_task_reads_through_one_storage_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = _store(tmp_path)
    (group,) = plan_partitions({"path": url})
    opened: list[object] = []
    real_open = Store.open

    def counted(self: Store) -> object:
        opened.append(self)
        return real_open(self)

    monkeypatch.setattr(Store, "open", counted)
    schema = pa.schema([("ledger_id", pa.int64()), ("entry_id", pa.int64())])
    assert sum(batch.num_rows for batch in read_partition_batches(Store.of(url), group, schema, 100)) > 0
    assert sum(1 for _ in read_partition(Store.of(url), group, Decode.NONE)) > 0
    # A client a task, not one per ledger: on a cloud store each costs a connection.
    assert len(opened) == 2 and len(group.data_keys) == 8


def test_a_ledger_with_a_small_and_a_large_copy_is_refused_before_any_index_is_read(tmp_path: Path) -> None:
    from offload_core.errors import ConfigError

    url = f"file://{tmp_path / 'bucket'}"
    small, large = uuid.uuid4(), uuid.uuid4()
    open_offloader(url, max_block_size=2048).offload(InMemoryReadHandle(6, [b"s" * 100] * 5), small)
    open_offloader(url, max_block_size=2048).offload(InMemoryReadHandle(6, [b"l" * 100] * 400), large)
    budget = {"bytesPerPartition": str(8 * 2048)}  # the second copy is larger: cut on the driver
    with pytest.raises(ConfigError, match=rf"2 complete copies of ledger 6 \(uuids {min(str(small), str(large))}"):
        plan_partitions({"path": url, **budget})
    chosen = plan_partitions({"path": url, "ledgerUuids": f"6:{large}", **budget})
    assert {p.data_key.split("-ledger-")[0] for p in chosen} == {str(large)}
