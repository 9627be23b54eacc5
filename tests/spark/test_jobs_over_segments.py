"""verify and retention on Spark over PIP-76 segments beside v1 ledgers:
segments are checked block by block (a damaged one is reported), aged by
their ledgers' close times and deleted with every object they have."""

from __future__ import annotations

import random
import struct
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.formats import entry_offsets
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.model import Entry
from offload_core.offload import OfferResult, SegmentLimits
from offload_core.spark.retention_job import retention
from offload_core.spark.verify_job import verify_store

pytestmark = pytest.mark.spark

BLOCK = 4096
CUTOFF = datetime(2026, 6, 1, tzinfo=UTC)
OLD_MS = int(datetime(2026, 1, 15, tzinfo=UTC).timestamp() * 1000)
NEW_MS = int(datetime(2026, 9, 1, tzinfo=UTC).timestamp() * 1000)
VERSION = {v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION}


def payloads(ledger_id: int, count: int) -> list[bytes]:
    rng = random.Random(ledger_id)
    return [rng.randbytes(rng.randrange(1, 400)) for _ in range(count)]


def stream(url: str, ledgers: dict[int, list[bytes]], closed_ms: int | None) -> str:
    """One segment of ``ledgers``; each closed at ``closed_ms`` as its
    index records it, or still open (``None``)."""

    def info(ledger_id: int, last: int) -> bytes:
        if closed_ms is None:
            return v2.ledger_info_bytes(ledger_id, last_entry_id=last, closed=False)
        entries = ledgers[ledger_id]
        return v2.ledger_info_bytes(ledger_id, last_entry_id=last, closed=True, entries=len(entries),
                                    size=sum(map(len, entries)), timestamp_ms=closed_ms)  # fmt: skip

    uid = str(uuid.uuid4())
    limits = SegmentLimits(streaming_block_size=BLOCK, max_buffer_size=1 << 20)
    handle = open_offloader(url, max_block_size=BLOCK).streaming_offload(uid, limits=limits, ledger_info=info)
    for ledger_id, entries in ledgers.items():
        for entry_id, data in enumerate(entries):
            assert handle.offer_entry(Entry(ledger_id, entry_id, data)) is OfferResult.SUCCESS
    handle.close()
    assert handle.result(30) is not None
    return uid


def as_written_before(url: str, uid: str) -> None:
    """The segment as written before its entry offsets moved into the data
    object: blocks only, the offsets in a third object."""
    driver = open_driver(url)
    index = v2.decode_index(driver.read(v2.segment_index_key(uid)))
    data = driver.read(v2.segment_data_key(uid))
    section = data[index.data_object_length :]
    assert entry_offsets.is_section(section)
    driver.write(v2.segment_data_key(uid), data[: index.data_object_length], metadata=VERSION)
    driver.write(v2.segment_entry_offsets_key(uid), section, metadata=VERSION)


def keys(url: str) -> set[str]:
    return {info.key for info in open_driver(url).list("")}


@pytest.fixture
def mixed(tmp_path: Path) -> tuple[str, str, str]:
    """A v1 ledger (1), a segment of ledgers 5 and 6, one of ledger 7."""
    url = f"file://{tmp_path / 'bucket'}"
    open_offloader(url, max_block_size=BLOCK).offload(InMemoryReadHandle(1, payloads(1, 80)), uuid.uuid4())
    shared = stream(url, {5: payloads(5, 90), 6: payloads(6, 40)}, OLD_MS)
    alone = stream(url, {7: payloads(7, 60)}, OLD_MS)
    return url, shared, alone


def test_verify_checks_segments_beside_ledgers(spark: Any, mixed: tuple[str, str, str]) -> None:
    url, shared, alone = mixed
    result = verify_store(spark, url)
    assert result.ok and result.defects.count() == 0
    by_uuid = {report.offload.uuid: report for report in result.reports}
    assert {report.offload.kind for report in result.reports} == {"pulsar-ledger", "pulsar-segment"}
    assert by_uuid[shared].offload.ledger_ids == (5, 6) and by_uuid[shared].entries == 130
    assert by_uuid[alone].entries == 60 and by_uuid[alone].blocks > 1
    only_six = verify_store(spark, url, ledgers=[6])
    assert [report.offload.uuid for report in only_six.reports] == [shared]


def test_a_damaged_segment_block_is_reported_with_its_offset(spark: Any, mixed: tuple[str, str, str]) -> None:
    url, shared, _ = mixed
    driver = open_driver(url)
    key = v2.segment_data_key(shared)
    index = v2.decode_index(driver.read(v2.segment_index_key(shared)))
    ledger_id, row = index.blocks[1]
    data = bytearray(driver.read(key))
    struct.pack_into(">i", data, row.data_offset, 2**31 - 1)  # the block's first entry claims 2 GiB
    driver.write(key, bytes(data), metadata=VERSION)
    result = verify_store(spark, url)
    assert not result.ok
    rows = result.defects.collect()
    assert [(r.ledger_id, r.uuid, r.key, r.offset) for r in rows] == [(ledger_id, shared, key, row.offset)]
    assert rows[0].problem.startswith(f"block {row.part_id}: ")


def test_a_segment_missing_its_index_is_reported(spark: Any, mixed: tuple[str, str, str]) -> None:
    url, _, alone = mixed
    open_driver(url).delete([v2.segment_index_key(alone)])
    rows = verify_store(spark, url).defects.collect()
    assert [(r.ledger_id, r.uuid, r.problem) for r in rows] == [(None, alone, "index object is missing")]


def test_retention_deletes_old_segments_with_all_their_objects(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    old = stream(url, {5: payloads(5, 50), 6: payloads(6, 20)}, OLD_MS)
    before = stream(url, {8: payloads(8, 30)}, OLD_MS)
    as_written_before(url, before)
    new = stream(url, {7: payloads(7, 30)}, NEW_MS)
    still_open = stream(url, {9: payloads(9, 30)}, None)
    everything = keys(url)
    dry = retention(spark, url, cutoff=CUTOFF)
    actions = {d.offload.uuid: (d.offload.ledger_ids, d.action) for d in dry.decisions}
    assert actions == {old: ((5, 6), "delete"), before: ((8,), "delete"), new: ((7,), "keep"),
                       still_open: ((9,), "keep")}  # fmt: skip
    assert "age unknown" in next(d.reason for d in dry.decisions if d.offload.uuid == still_open)
    assert keys(url) == everything
    done = retention(spark, url, cutoff=CUTOFF, dry_run=False)
    assert sorted(d.action for d in done.decisions) == ["deleted", "deleted", "keep", "keep"]
    assert {row.kind for row in done.actions.collect()} == {"pulsar-segment"}
    kept = {key(uid) for uid in (new, still_open) for key in (v2.segment_data_key, v2.segment_index_key)}
    assert keys(url) == kept  # the old segments' data, index and third object are gone
