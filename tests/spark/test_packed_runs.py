"""Runs of small PIP-76 segments packed into one ``pulsar-offload``
partition (issue 42 item 5): a partition holds what fits
``bytesPerPartition`` with Spark's open cost, pickles to a few bytes a
run, and reads what the runs read as partitions of their own."""

from __future__ import annotations

import pickle
import random
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.model import Entry
from offload_core.spark import BlockRangePartition, plan_partitions
from offload_core.spark.column_bounds import ANY_VALUE, ColumnBounds
from offload_core.spark.packed_runs import PackedRunsPartition, packed_runs
from offload_core.spark.pulsar_offload import read_partition
from offload_core.spark.read_options import OPEN_COST_BYTES as OPEN_COST
from offload_core.spark.read_options import Decode
from offload_core.spark.store_tasks import Store
from tests.spark.test_pulsar_offload_segments import entries_of, stream

_blocks = st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 2**62)), max_size=5)
_ranges = st.lists(st.tuples(st.integers(0, 2**62), st.none() | st.integers(0, 2**62)), min_size=1, max_size=3)
_runs = st.lists(
    st.builds(
        lambda ledger, key, blocks, ranges: BlockRangePartition(
            ledger, key, tuple(blocks), tuple(ranges), streaming=True
        ),  # fmt: skip
        st.integers(0, 2**63 - 1),
        st.text(max_size=40),
        _blocks,
        _ranges,
    ),
    min_size=1,
    max_size=20,
)


@given(_runs)
def test_packed_runs_give_back_the_runs_in_order(runs: list[BlockRangePartition]) -> None:
    packed = list(packed_runs(runs, 128 * 2**20))
    assert [run for partition in packed for run in pickle.loads(pickle.dumps(partition)).runs()] == runs


def test_runs_pack_up_to_the_budget_with_the_open_cost() -> None:
    runs = [BlockRangePartition(7, f"s/{n}", ((0, 10_000, n * 10),), ((0, None),), streaming=True) for n in range(70)]
    packed = list(packed_runs(runs, 128 * 2**20))
    fits = 128 * 2**20 // (10_000 + OPEN_COST)
    assert [len(p.data_keys) for p in packed] == [fits, fits, 70 - 2 * fits]
    # A few bytes a run: its key, and nine int64s (ledger, last entry, counts, one block, one range).
    assert sum(len(pickle.dumps(p)) for p in packed) / len(runs) < len("s/00") + 4 + 9 * 8 + 16


def test_packed_runs_pickle_to_fewer_bytes_than_their_int64s() -> None:
    """A run's integers are mostly zero bytes and repeats (offsets and
    entry ids far below 2**63, -1 for an open end, a ledger's id in each of
    its runs): compressed, runs of scattered offsets and entries pickle to
    some 70 bytes a run, their 36-character keys included, where their
    int64s alone were 80 (117 with the keys)."""
    rng = random.Random(42)
    runs = []
    for number in range(600):
        offset, first = rng.randrange(2**30), rng.randrange(10**6)
        end = offset + rng.randrange(10**5, 4 * 10**6)
        blocks = [(offset, end, first)] + ([(end, end + 10**5, first + 500)] if number % 3 == 0 else [])
        runs.append(BlockRangePartition(10**6 + number // 7, str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                                        tuple(blocks), ((first, None),), streaming=True,
                                        last_entry=None if number % 2 else first + 9_000))  # fmt: skip
    packed = list(packed_runs(runs, 128 * 2**20))
    assert len(packed) > 10
    assert [run for partition in packed for run in pickle.loads(pickle.dumps(partition)).runs()] == runs
    assert sum(len(pickle.dumps(partition)) for partition in packed) / len(runs) < 90


def test_a_store_of_small_segments_plans_packed_runs_that_read_what_each_run_reads(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    payloads = {ledger_id: entries_of(ledger_id, 60) for ledger_id in (4, 5)}
    for part in range(6):  # six segments of ten entries of ledger 4 each, the last then ledger 5's
        entries = [Entry(4, entry_id, payloads[4][entry_id]) for entry_id in range(10 * part, 10 * part + 10)]
        if part == 5:
            entries += [Entry(5, entry_id, payload) for entry_id, payload in enumerate(payloads[5])]
        stream(url, entries)
    store = Store.of(url)
    for options, bounds in [({}, ANY_VALUE), ({"entries": "4:15-41"}, ANY_VALUE), ({}, ColumnBounds(low=33))]:
        packed = plan_partitions({"path": url, **options}, entry_bounds=bounds)
        apart = plan_partitions({"path": url, "blocksPerPartition": "1", **options}, entry_bounds=bounds)
        assert [type(p) for p in packed] == [PackedRunsPartition]
        assert all(isinstance(p, BlockRangePartition) for p in apart) and len(apart) > 1
        rows = [row[:4] for p in packed for row in read_partition(store, p, Decode.NONE)]
        assert rows and rows == [row[:4] for p in apart for row in read_partition(store, p, Decode.NONE)]


@pytest.mark.parametrize("arrow", [True, False])
def test_the_reader_reads_packed_runs_both_ways(tmp_path: Path, arrow: bool) -> None:
    from offload_core.spark.pulsar_offload import PulsarOffloadReader

    url = f"file://{tmp_path / 'bucket'}"
    for part in range(3):
        stream(url, [Entry(9, entry_id, b"e%d" % entry_id) for entry_id in range(5 * part, 5 * part + 5)])
    reader = PulsarOffloadReader({"path": url, "decode": "none", "arrow": str(arrow).lower()})
    (partition,) = reader.partitions()
    got = [row for out in reader.read(partition) for row in (out.to_pylist() if arrow else [out])]
    entries = [r["entry_id"] for r in got] if arrow else [r[1] for r in got]
    assert entries == list(range(15))
