"""`offload ledgers ls / cat / verify / rm` on MapFile ledgers (Pulsar's
file-system offloader), beside PIP-17 ledgers in the same store, and on
the Hadoop-written vectors."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, open_driver
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from tests.pulsar_fs_vectors import FsVector, load_fs_vectors
from tests.test_cli_ledgers import U1, U2, entries_of

ML = "public/default/persistent/orders"


def offload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "hadoop.tmp.dir"
    url = f"file://{root}"
    MapFileLedgerOffloader(open_driver(url), block_size=3000, index_interval=8).offload(
        InMemoryReadHandle(5, entries_of(5)), uuid.UUID(U1), {"ManagedLedgerName": ML}
    )
    BlobStoreLedgerOffloader(open_driver(url), max_block_size=4096).offload(
        InMemoryReadHandle(6, entries_of(6)), uuid.UUID(U2)
    )
    return root


def test_ls_lists_both_layouts(store: Path) -> None:
    result = offload("ledgers", "ls", f"file://{store}", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["ledger_id"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert rows[5]["state"] == "complete (mapfile)" and rows[5]["managed_ledger"] == ML
    assert (rows[5]["entries"], rows[5]["bytes"]) == (120, sum(map(len, entries_of(5))))
    assert rows[6]["state"] == "complete"


def test_cat_reads_a_mapfile_ledger(store: Path) -> None:
    result = offload("ledgers", "cat", f"file://{store}", "5", "--json", "--from", "3", "--to", "117")
    assert result.returncode == 0, result.stderr
    payloads = [base64.b64decode(json.loads(line)["payload_b64"]) for line in result.stdout.splitlines()]
    assert payloads == entries_of(5)[3:118]


def test_verify_passes_then_names_a_damaged_unit_and_a_checksum(store: Path) -> None:
    result = offload("ledgers", "verify", f"file://{store}", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    reports = {r["ledger_id"]: r for r in map(json.loads, result.stdout.splitlines())}
    assert reports[5]["ok"] and reports[5]["entries"] == 120 and reports[5]["blocks"] > 3
    data = next(store.rglob("5-*/data"))
    damaged = bytearray(data.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    data.write_bytes(bytes(damaged))
    result = offload("ledgers", "verify", f"file://{store}", "5")
    assert result.returncode == 1
    # Verify checks the .crc files itself: the damaged chunk is named by its offset, then what it broke.
    chunk = len(damaged) // 2 // 512 * 512
    assert f"DEFECT  ledger 5 ({ML}/5-{U1}/data at byte {chunk}): checksum mismatch (.data.crc)" in result.stdout
    assert "bad zlib buffer" in result.stdout


def test_rm_deletes_the_whole_directory(store: Path) -> None:
    dry = offload("ledgers", "rm", f"file://{store}", "5")
    assert dry.returncode == 0 and "would delete" in dry.stdout and ".data.crc" in dry.stdout
    assert offload("ledgers", "rm", f"file://{store}", "5", "--execute").returncode == 0
    assert not list(store.rglob("5-*/*"))
    assert "5" not in [line.split()[0] for line in offload("ledgers", "ls", f"file://{store}").stdout.splitlines()[1:]]


def test_an_unfinished_directory_is_listed_as_incomplete(store: Path) -> None:
    next(store.rglob("5-*/index")).unlink()
    rows = {r["ledger_id"]: r for r in map(json.loads, offload("ledgers", "ls", f"file://{store}", "--json")
                                            .stdout.splitlines())}  # fmt: skip
    assert rows[5]["state"] == "incomplete (index missing)"


@pytest.mark.parametrize("vector", [v for v in load_fs_vectors() if v.entries], ids=lambda v: v.name)
def test_the_hadoop_written_vectors_read_and_verify(vector: FsVector, tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(vector.root, root)
    cat = offload("ledgers", "cat", f"file://{root}", str(vector.ledger_id), "--json")
    assert cat.returncode == 0, cat.stderr
    assert [base64.b64decode(json.loads(line)["payload_b64"]) for line in cat.stdout.splitlines()] == vector.entries
    verify = offload("ledgers", "verify", f"file://{root}")
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_orphans_finds_and_deletes_mapfile_directories_a_topic_does_not_reference(tmp_path: Path) -> None:
    from offload_core.managed_ledger import Broker, parse_config
    from tests.managed_ledger.test_filesystem_offloader import pulsar_profile

    base, data = tmp_path / "hadoop", tmp_path / "data"
    config = {"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "file:///",
              "fileSystemProfilePath": str(pulsar_profile(tmp_path, str(base))),
              "managedLedgerMaxEntriesPerLedger": 50}  # fmt: skip
    with Broker(data, parse_config(config)) as broker:
        topic = broker.topic("a/b/c")
        for n in range(120):
            topic.append(b"%d" % n)
        assert topic.offload_prefix().status == "success"
    url = f"file://{base}"
    referenced = {info.key for info in open_driver(url).list("")}
    assert len(referenced) == 8  # two offloaded ledgers, four files each
    for ledger_id, uid in ((98, U1), (99, U2)):
        MapFileLedgerOffloader(open_driver(url)).offload(
            InMemoryReadHandle(ledger_id, entries_of(ledger_id)), uuid.UUID(uid), {"ManagedLedgerName": ML}
        )
    open_driver(url).delete(f"{ML}/98-{U1}/index")  # an offload that never finished
    listed = offload("ledgers", "orphans", url, "--data-dir", str(data), "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["ledger_id"]: row for row in map(json.loads, listed.stdout.splitlines())}
    assert sorted(rows) == [98, 99] and all(row["action"] == "delete" for row in rows.values())
    assert sorted(key.rsplit("/", 1)[1] for key in rows[98]["keys"]) == [".data.crc", ".index.crc", "data"]
    assert rows[99]["bytes"] == sum(p.stat().st_size for p in (base / ML / f"99-{U2}").iterdir())
    assert {info.key for info in open_driver(url).list("")} >= {*rows[98]["keys"], *rows[99]["keys"]}
    deleted = offload("ledgers", "orphans", url, "--data-dir", str(data), "--execute")
    assert deleted.returncode == 0 and "2 orphan ledger(s) deleted" in deleted.stderr, deleted.stderr
    assert {info.key for info in open_driver(url).list("")} == referenced


def test_sweep_lists_unfinished_mapfile_offloads_and_deletes_them_with_execute(store: Path) -> None:
    directory = f"{ML}/5-{U1}/"
    open_driver(f"file://{store}").delete(directory + "index")  # as if the offload died before its commit point
    before = sorted(p.relative_to(store) for p in store.rglob("*") if p.is_file())
    dry = offload("ledgers", "sweep", f"file://{store}")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove unfinished MapFile offload {directory}" in dry.stdout
    assert "dry run: nothing deleted; add --execute" in dry.stderr
    assert offload("ledgers", "sweep", f"file://{store}", "--execute", "--dry-run").returncode == 0
    assert sorted(p.relative_to(store) for p in store.rglob("*") if p.is_file()) == before
    done = offload("ledgers", "sweep", f"file://{store}", "--execute")
    assert done.returncode == 0 and f"removed unfinished MapFile offload {directory}" in done.stdout, done.stderr
    assert not list(store.rglob("5-*/*"))
    assert [json.loads(line)["ledger_id"] for line in offload("ledgers", "ls", f"file://{store}", "--json")
            .stdout.splitlines()] == [6]  # fmt: skip
