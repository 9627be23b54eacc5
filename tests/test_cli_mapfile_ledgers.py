"""`offload ledgers ls / cat / verify / rm` on MapFile ledgers (Pulsar's
file-system offloader), beside PIP-17 ledgers in the same store, and on
the Hadoop-written vectors."""

from __future__ import annotations

import base64
import json
import re
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
    # Reads check the .crc files too, so opening the ledger already meets the damaged chunk.
    assert re.search(rf"{ML}/5-{U1}/data: checksum mismatch in the bytes from offset \d+ \(.*/\.data\.crc\)",
                     result.stdout)  # fmt: skip


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
