"""What planning a read asks of the store on the Spark driver (issue 42
item 5): the listing, and the index objects the partitioning needs, with
no request per object listed and no read of what the tasks read anyway."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.model import Entry
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark import plan_partitions
from offload_core.spark.kafka_remote import plan_partitions as plan_kafka_partitions
from offload_core.spark.kind_partitions import OffloadPartition
from offload_core.spark.ledger_groups import LedgerGroupPartition
from offload_core.spark.planning_reads import read_objects
from offload_core.spark.pulsar_offload import read_partition
from offload_core.spark.read_options import OPEN_COST_BYTES as OPEN_COST
from offload_core.spark.read_options import Decode, parse_read_options
from offload_core.spark.store_tasks import Store
from tests.rsm.segments import numbered_segments, write_partition
from tests.spark.planned_blocks import planned_ledger_ids
from tests.spark.test_jobs_over_mapfiles import entries_of, write_mapfile
from tests.spark.test_pulsar_offload_segments import stream


@pytest.fixture
def store_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every stat, read and listing sent to a filesystem store, by operation
    (the calls a transforming driver makes to the store below it count)."""
    calls: Counter[str] = Counter()

    def counted(op: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def call(self: FilesystemDriver, *args: Any) -> Any:
            calls[op] += 1
            return method(self, *args)

        return call

    for op in ("stat", "read", "list"):
        monkeypatch.setattr(FilesystemDriver, f"_{op}", counted(op, getattr(FilesystemDriver, f"_{op}")))
    return calls


def test_planning_ledgers_and_segments_reads_their_indexes_and_stats_nothing_else(
    tmp_path: Path, store_calls: Counter[str]
) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=4096)
    for ledger_id in range(60):
        offloader.offload(InMemoryReadHandle(ledger_id, [bytes([ledger_id]) * 50] * 5), uuid.uuid4())
    for ledger_id in range(100, 120):
        stream(url, [Entry(ledger_id, entry_id, b"x" * 50) for entry_id in range(5)])
    indexes = 20  # the segments'; the small ledgers' are read by their tasks
    store_calls.clear()
    planned = plan_partitions({"path": url})
    packed = [p for p in planned if isinstance(p, LedgerGroupPartition)]
    # Each counts as its size and Spark's 4 MiB open cost: 31 fit in 128 MiB.
    assert [len(p.data_keys) for p in packed] == [31, 29]
    assert sorted(ledger_id for p in packed for _, ledger_id, _ in p.ledgers()) == list(range(60))
    assert sorted(planned_ledger_ids([p for p in planned if p not in packed])) == list(range(100, 120))
    # One GET per segment index, one stat each to learn how it was written
    # (the read transforms' chain); before, the listing stat-ed every
    # object of the store, three times over (one listing per kind), and
    # every whole ledger's index was read here too.
    assert store_calls["read"] == indexes
    assert store_calls["stat"] <= indexes
    assert store_calls["list"] == 1  # one listing serves every kind (v1, segments, MapFile ledgers)


def test_planning_mapfile_ledgers_reads_none_of_them(tmp_path: Path, store_calls: Counter[str]) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    for ledger_id in range(12):
        write_mapfile(url, ledger_id)
    store_calls.clear()
    planned = plan_partitions({"path": url, "bytesPerPartition": str(4 * OPEN_COST)})
    # In the listing's order: the ledger ids' digits as text.
    assert [p.ledger_ids for p in planned if isinstance(p, OffloadPartition)] == [(0, 1, 10), (11, 2, 3), (4, 5, 6),
                                                                               (7, 8, 9)]  # fmt: skip
    # The keys name the ledger: nothing to read (before, each directory
    # was opened for the age it holds, which a read does not use).
    assert (store_calls["read"], store_calls["stat"]) == (0, 0)
    store_calls.clear()
    rows = list(read_partition(Store.of(url), planned[1], Decode.NONE))
    assert [(row[0], row[3]) for row in rows] == [(ledger_id, payload) for ledger_id in (11, 2, 3)
                                                  for payload in entries_of(ledger_id, 300)]  # fmt: skip
    # The task locates each directory by a listing of it alone, then opens the ledger.
    assert store_calls["list"] == 3


def test_planning_kafka_segments_reads_each_manifest_and_stats_nothing_else(
    tmp_path: Path, store_calls: Counter[str]
) -> None:
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url))
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(8)))
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    store_calls.clear()
    planned = plan_kafka_partitions({"url": url, "subscribe": "orders"})
    assert [len(p.ranges) for p in planned] == [len(segments)]  # small segments, packed into one partition
    assert store_calls["read"] == len(segments)  # the manifests
    assert store_calls["stat"] <= len(segments)


def test_index_objects_are_decoded_as_planning_takes_them_not_all_at_once(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    store = open_driver(url)
    keys = [f"index-{number:04d}" for number in range(300)]
    for key in keys:
        store.write(key, [key.encode()])
    decoded: list[bytes] = []

    def decode(data: bytes) -> bytes:
        decoded.append(data)
        return data

    taken = iter(read_objects(parse_read_options({"path": url}), keys, decode))
    assert next(taken) == b"index-0000"
    # A window of 32 ahead of the caller, whatever the number of objects
    # (before, all 300 were fetched and held before planning saw one).
    assert len(decoded) <= 32
    assert [b"index-0000", *taken] == [key.encode() for key in keys]


def test_the_keys_to_read_are_taken_as_the_reads_need_them(tmp_path: Path) -> None:
    """Planning passes its index keys as a generator: no list of a key per
    ledger or segment is made beside the listing's."""
    url = f"file://{tmp_path / 'bucket'}"
    store = open_driver(url)
    for number in range(100):
        store.write(f"index-{number:04d}", [b"%d" % number])
    pulled: list[int] = []

    def keys() -> Iterator[str]:
        for number in range(100):
            pulled.append(number)
            yield f"index-{number:04d}"

    taken = read_objects(parse_read_options({"path": url}), keys(), int)
    assert next(taken) == 0
    assert len(pulled) <= 33  # the one returned and the window ahead of it
    assert [0, *taken] == list(range(100))
