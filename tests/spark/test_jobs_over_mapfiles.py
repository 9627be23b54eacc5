"""Pulsar's file-system offloader's MapFile ledgers in the store-wide Spark
jobs and the ``pulsar-offload`` source, through the kind of stored offload
the MapFile offloader registers: verified (damage named by file and
offset), aged by the ``ctime`` at key -1 and deleted whole, backfilled
into, and read entry for entry beside v1 ledgers and v2 segments."""

from __future__ import annotations

import random
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.errors import AccessDeniedError, FormatError
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import Broker, SqliteMetadataStore, parse_config
from offload_core.model import Entry
from offload_core.offload.mapfile.mapfile_inventory import MapFileLedger, find_mapfile_ledgers, read_mapfile_ledger
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from offload_core.offload.stored.kinds import StoredKind
from offload_core.plugins import default_plugin_manager
from offload_core.spark.backfill_job import backfill
from offload_core.spark.retention_job import retention
from offload_core.spark.verify_job import verify_store
from tests.managed_ledger.test_filesystem_offloader import pulsar_profile
from tests.spark.test_pulsar_offload_segments import stream

pytestmark = pytest.mark.spark

MANAGED_LEDGER = "public/default/persistent/orders"
SYNC = bytes(range(16))
CUTOFF = datetime(2026, 6, 1, tzinfo=UTC)
OLD_MS = int(datetime(2026, 1, 15, tzinfo=UTC).timestamp() * 1000)
NEW_MS = int(datetime(2026, 9, 1, tzinfo=UTC).timestamp() * 1000)


def entries_of(ledger_id: int, count: int) -> list[bytes]:
    rng = random.Random(ledger_id)
    return [rng.randbytes(rng.randrange(0, 400)) for _ in range(count)]


def mapfile_kind() -> StoredKind:
    """The kind the MapFile offloader registers, as the jobs find it."""
    (kind,) = [kind for kind in default_plugin_manager().stored_kinds() if kind.name == "pulsar-mapfile"]
    return kind


def write_mapfile(url: str, ledger_id: int, created_ms: int = OLD_MS, **options: Any) -> MapFileLedger:
    """A MapFile ledger of ``entries_of(ledger_id, 300)`` in 4 KB blocks."""
    entries = entries_of(ledger_id, 300)
    metadata = v1.closed_ledger_metadata(length=sum(map(len, entries)), last_entry_id=len(entries) - 1,
                                         ctime_ms=created_ms)  # fmt: skip
    driver = open_driver(url)
    offloader = MapFileLedgerOffloader(driver, block_size=4096, new_sync=lambda: SYNC, **options)
    uid = uuid.uuid4()
    offloader.offload(InMemoryReadHandle(ledger_id, entries, metadata), uid, {"ManagedLedgerName": MANAGED_LEDGER})
    offloader.close()
    (ledger,) = [found for found in find_mapfile_ledgers(open_driver(url)) if found.uuid == str(uid)]
    return ledger


def test_verify_names_the_file_and_offset_of_each_damage(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'hadoop'}"
    driver = open_driver(url)
    good = write_mapfile(url, 1)
    damaged = write_mapfile(url, 2, checksum_files=False)
    data = bytearray(driver.read(damaged.data_key))
    blocks = [match.start() for match in re.finditer(re.escape(b"\xff\xff\xff\xff" + SYNC), data)]
    assert len(blocks) > 3
    data[blocks[2] + 40] ^= 0x10  # inside the third block's compressed buffers
    driver.write(damaged.data_key, bytes(data), metadata={})
    bad_crc = write_mapfile(url, 3)
    crc_key = f"{bad_crc.directory}/.data.crc"
    checksums = bytearray(driver.read(crc_key))
    checksums[8 + 4 * 5] ^= 0x01  # the checksum of bytes 2560..3071
    driver.write(crc_key, bytes(checksums), metadata={})
    unfinished = write_mapfile(url, 4)
    driver.delete(unfinished.index_key)

    result = verify_store(spark, url)

    assert {report.offload.kind for report in result.reports} == {"pulsar-mapfile"}
    assert [report.ok for report in result.reports] == [True, False, False, False]
    assert result.reports[0].entries == 300 and result.reports[0].offload.ledger_ids == (good.ledger_id,)
    rows = sorted(result.defects.collect(), key=lambda row: row.ledger_id)
    assert [(row.ledger_id, row.uuid, row.key, row.offset) for row in rows] == [
        (2, damaged.uuid, damaged.data_key, blocks[2]),
        (3, bad_crc.uuid, bad_crc.data_key, 5 * 512),
        (4, unfinished.uuid, unfinished.index_key, None),
    ]
    assert "checksum mismatch (.data.crc)" in rows[1].problem
    assert "never finished" in rows[2].problem


def test_retention_ages_mapfiles_by_their_ctime_and_deletes_directories_whole(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'hadoop'}"
    old = write_mapfile(url, 1, OLD_MS)
    write_mapfile(url, 2, NEW_MS)
    unfinished = write_mapfile(url, 3, OLD_MS)  # an offload still being written: no index yet
    open_driver(url).delete(unfinished.index_key)
    assert len(old.files) == 4  # data, index and their .crc files

    dry = retention(spark, url, cutoff=CUTOFF)
    decided = {d.offload.ledger_ids: (d.action, d.created_ms) for d in dry.decisions}
    assert decided == {(1,): ("delete", OLD_MS), (2,): ("keep", NEW_MS), (3,): ("keep", None)}
    retention(spark, url, cutoff=CUTOFF, dry_run=False)

    left = find_mapfile_ledgers(open_driver(url))
    assert [ledger.ledger_id for ledger in left] == [2, 3]
    assert not list(open_driver(url).list(old.directory + "/"))


def test_an_interrupted_delete_leaves_an_unfinished_directory_that_retention_finishes(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"file://{tmp_path / 'hadoop'}"
    ledger = write_mapfile(url, 7)
    driver = open_driver(url)
    real_delete = driver.delete

    def data_refused(keys: Any) -> None:
        if ledger.data_key in ([keys] if isinstance(keys, str) else list(keys)):
            raise AccessDeniedError(f"{ledger.data_key}: not allowed")
        real_delete(keys)

    monkeypatch.setattr(driver, "delete", data_refused)
    kind = mapfile_kind()
    (offload,) = kind.find(driver, "")
    with pytest.raises(AccessDeniedError):
        kind.delete(driver, offload)

    (left,) = kind.find(driver, "")
    assert not left.complete and left.keys == (ledger.data_key,)
    with pytest.raises(FormatError, match="never finished"):
        read_mapfile_ledger(driver, left.detail)
    store = SqliteMetadataStore(tmp_path / "metadata.db")  # no managed ledger refers to it
    try:
        done = retention(spark, url, cutoff=CUTOFF, metadata=store, delete_orphans=True, dry_run=False)
    finally:
        store.close()
    assert [(d.offload.kind, d.action) for d in done.decisions] == [("pulsar-mapfile", "deleted")]
    assert list(open_driver(url).list("")) == []


def test_backfill_with_pulsars_filesystem_keys_writes_mapfiles_the_jobs_serve(spark: Any, tmp_path: Path) -> None:
    base, data = tmp_path / "hadoop", tmp_path / "data"
    config = parse_config({
        "managedLedgerMaxEntriesPerLedger": 40,
        "managedLedgerOffloadDriver": "filesystem",
        "fileSystemURI": "file:///",
        "fileSystemProfilePath": str(pulsar_profile(tmp_path, str(base))),
    })  # fmt: skip
    topic = "persistent://public/default/clicks"
    messages = [b"click %d " % n * (n % 7 + 1) for n in range(200)]
    with Broker(data, config) as broker:
        ledger = broker.topic(topic)
        for message in messages:
            ledger.append(message)  # five ledgers, each sealed as it fills
    result = backfill(spark, data, config=config)
    assert len(result.offloaded) == 5 and not result.failed
    url = f"file://{base}"
    written = find_mapfile_ledgers(open_driver(url))
    assert [(ledger.managed_ledger, ledger.complete) for ledger in written] == [("public/default/persistent/clicks",
                                                                                 True)] * 5  # fmt: skip
    verified = verify_store(spark, url)
    assert verified.ok and [r.entries for r in verified.reports] == [40] * 5
    store = SqliteMetadataStore(data / "metadata.db")
    try:
        kept = retention(spark, url, cutoff=datetime(2100, 1, 1, tzinfo=UTC), metadata=store, delete_orphans=True,
                         dry_run=False)  # fmt: skip
    finally:
        store.close()
    assert {(d.action, d.referenced_by) for d in kept.decisions} == {("keep", "public/default/persistent/clicks")}
    rows = spark.read.format("pulsar-offload").option("decode", "none").load(url).collect()
    assert [bytes(row.payload) for row in sorted(rows, key=lambda r: (r.ledger_id, r.entry_id))] == messages


def test_a_store_holding_v1_ledgers_v2_segments_and_mapfiles(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    expected = {ledger_id: entries_of(ledger_id, 300) for ledger_id in (3, 5, 6, 8, 9)}
    open_offloader(url, max_block_size=8192).offload(InMemoryReadHandle(3, expected[3]), uuid.uuid4())
    stream(url, [Entry(lid, eid, payload) for lid in (5, 6) for eid, payload in enumerate(expected[lid])])
    write_mapfile(url, 8)
    write_mapfile(url, 9, compression="RECORD")

    frame = spark.read.format("pulsar-offload").option("decode", "none").load(url)
    rows = sorted((r.ledger_id, r.entry_id, bytes(r.payload)) for r in frame.collect())
    assert rows == [(lid, eid, payload) for lid, entries in sorted(expected.items()) for eid, payload in
                    enumerate(entries)]  # fmt: skip
    ranged = spark.read.format("pulsar-offload").options(entries="8:10-12,9:299", decode="none").load(url)
    assert sorted((r.ledger_id, r.entry_id) for r in ranged.collect()) == [(8, 10), (8, 11), (8, 12), (9, 299)]

    verified = verify_store(spark, url)
    assert verified.ok
    assert sorted((r.offload.kind, r.offload.ledger_ids, r.entries) for r in verified.reports) == [
        ("pulsar-ledger", (3,), 300), ("pulsar-mapfile", (8,), 300), ("pulsar-mapfile", (9,), 300),
        ("pulsar-segment", (5, 6), 600),
    ]  # fmt: skip
    dry = retention(spark, url, cutoff=CUTOFF)
    assert (
        sorted((d.offload.kind, d.action) for d in dry.decisions if d.offload.kind == "pulsar-mapfile")
        == [("pulsar-mapfile", "delete")] * 2
    )


def test_the_spark_verbs_over_mapfiles(spark: Any, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from offload_core.cli import main

    url = f"file://{tmp_path / 'hadoop'}"
    ledger = write_mapfile(url, 4)
    driver = open_driver(url)
    crc_key = f"{ledger.directory}/.index.crc"
    checksums = bytearray(driver.read(crc_key))
    checksums[-1] ^= 0x01  # the checksum of the index's last 512-byte chunk
    driver.write(crc_key, bytes(checksums), metadata={})
    last_chunk = (driver.stat(ledger.index_key).size - 1) // 512 * 512
    verified = CliRunner().invoke(main, ["spark", "verify", url], catch_exceptions=False)
    assert verified.exit_code == 1
    defect = f"DEFECT  ledger 4 ({ledger.index_key} at byte {last_chunk}): checksum mismatch (.index.crc)"
    assert defect in verified.stdout
    retained = CliRunner().invoke(main, ["spark", "retention", url, "--before", "2026-06-01", "--execute"])
    assert retained.exit_code == 0, retained.output
    assert f"deleted  MapFile ledger 4 ({MANAGED_LEDGER}) ({ledger.uuid})" in retained.stdout
    assert list(driver.list("")) == []
