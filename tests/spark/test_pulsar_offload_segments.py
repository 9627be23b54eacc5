"""spark.read.format("pulsar-offload") over PIP-76 segments, alone and
mixed with v1 ledger objects: every entry exactly once."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.model import Entry
from offload_core.offload import OfferResult, SegmentLimits
from offload_core.spark import plan_partitions
from tests.offload.test_lenient_segment_headers import rewritten
from tests.pulsar_vectors import load_segment_vectors
from tests.spark.planned_blocks import block_partitions

pytestmark = pytest.mark.spark

BLOCK = 8192


def entries_of(ledger_id: int, count: int) -> list[bytes]:
    rng = random.Random(ledger_id)
    return [rng.randbytes(rng.randrange(0, 700)) for _ in range(count)]


def stream(url: str, entries: list[Entry]) -> None:
    offloader = open_offloader(url, max_block_size=BLOCK)
    handle = offloader.streaming_offload(uuid.uuid4(), limits=SegmentLimits(streaming_block_size=BLOCK,
                                                                            max_buffer_size=1 << 20))  # fmt: skip
    for entry in entries:
        assert handle.offer_entry(entry) is OfferResult.SUCCESS
    handle.close()
    assert handle.result(30) is not None


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[str, dict[int, list[bytes]]]:
    """Ledger 3 offloaded whole (v1); ledger 5 in two segments, the second
    shared with ledger 6; ledger 7 streamed in part, then offloaded whole
    (as when streaming is switched off): its segment copy must not count."""
    url = f"file://{tmp_path / 'bucket'}"
    ledgers = {3: entries_of(3, 200), 5: entries_of(5, 300), 6: entries_of(6, 120), 7: entries_of(7, 150)}
    offloader = open_offloader(url, max_block_size=BLOCK)
    for ledger_id in (3, 7):
        offloader.offload(InMemoryReadHandle(ledger_id, ledgers[ledger_id]), uuid.uuid4())
    stream(url, [Entry(5, e, d) for e, d in enumerate(ledgers[5][:180])])
    second = [Entry(5, e, d) for e, d in enumerate(ledgers[5]) if e >= 180]
    second += [Entry(6, e, d) for e, d in enumerate(ledgers[6])]
    second += [Entry(7, e, d) for e, d in enumerate(ledgers[7][:60])]
    stream(url, second)
    return url, ledgers


def test_every_entry_exactly_once_in_a_mixed_store(spark: Any, mixed: tuple[str, dict[int, list[bytes]]]) -> None:
    url, ledgers = mixed
    frame = spark.read.format("pulsar-offload").option("blocksPerPartition", "2").option("decode", "none").load(url)
    rows = sorted((r.ledger_id, r.entry_id, bytes(r.payload)) for r in frame.collect())
    assert rows == sorted((lid, eid, data) for lid, entries in ledgers.items() for eid, data in enumerate(entries))
    plan = plan_partitions({"path": url, "blocksPerPartition": "2"})
    streamed = [p for p in plan if p.streaming]
    assert {p.ledger_id for p in streamed} == {5, 6}  # ledger 7 is read from its v1 object only
    assert all(1 <= len(p.blocks) <= 2 for p in plan)


def test_entry_ranges_across_segments(spark: Any, mixed: tuple[str, dict[int, list[bytes]]]) -> None:
    url, ledgers = mixed
    frame = spark.read.format("pulsar-offload").options(entries="5:170-190,6:100-", decode="none").load(url)
    got = sorted((r.ledger_id, r.entry_id) for r in frame.collect())
    assert got == [(5, e) for e in range(170, 191)] + [(6, e) for e in range(100, 120)]
    one = block_partitions(url, plan_partitions({"path": url, "entries": "5:185"}))
    assert len(one) == 1 and one[0].streaming and len(one[0].blocks) == 1


def test_a_duplicate_segment_counts_once(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    entries = [Entry(9, e, d) for e, d in enumerate(entries_of(9, 100))]
    stream(url, entries)
    stream(url, entries)  # the same run again, as an orphan a crash left behind would be
    frame = spark.read.format("pulsar-offload").option("decode", "none").load(url)
    assert sorted(r.entry_id for r in frame.collect()) == list(range(100))


@pytest.mark.parametrize("header_length", [None, 128, 256], ids=["as written", "any fill", "longer header"])
def test_the_segment_pulsar_wrote(spark: Any, tmp_path: Path, header_length: int | None) -> None:
    url = f"file://{tmp_path}"
    driver = open_driver(url)
    (vector,) = load_segment_vectors()
    data, index = (vector.data, vector.index) if header_length is None else rewritten(vector, header_length)
    uid = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
    version = {v1.FORMAT_VERSION_KEY: "1"}
    driver.write(v2.segment_data_key(uid), data, metadata=version)
    driver.write(v2.segment_index_key(uid), index, metadata=version)
    rows = spark.read.format("pulsar-offload").option("decode", "none").load(url).collect()
    assert sorted((r.ledger_id, r.entry_id, bytes(r.payload)) for r in rows) == sorted(vector.entries)
