"""One bad block never hides a whole ledger: the intact entries are served,
and the lost ones are named, by the reader, `ledgers verify` and `cat`."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import BlobStoreLedgerOffloader, LostEntriesError
from offload_core.formats import pulsar_v1 as v1

UID = str(uuid.UUID("9d6ab0a8-4c35-4f42-9c7c-4a6f0c3b1e55"))
BLOCK = 65536


def pulsar_object_after_an_entry_too_large(root: Path) -> list[bytes]:
    """What Pulsar writes when entry 20 (70 KB) is larger than a 64 KiB
    block: block 1 holds entries 0..19, block 2 is padding only, and the
    index's data object length stops at block 2's start although both
    blocks were uploaded. The ledger itself has entries 0..22."""
    entries = [bytes([n]) * 100 for n in range(20)]
    data = v1.encode_block(0, BLOCK, entries) + v1.encode_block(20, BLOCK, [])
    metadata = v1.closed_ledger_metadata(length=2000 + 70_000 + 200, last_entry_id=22).SerializeToString()
    index = v1.Index(data_object_length=BLOCK, ledger_metadata=metadata,
                     entries=(v1.IndexEntry(0, 1, 0), v1.IndexEntry(20, 2, BLOCK)))  # fmt: skip
    driver = FilesystemDriver(str(root))
    version = {v1.FORMAT_VERSION_KEY: "1"}
    driver.write(v1.data_key(UID, 5), data, metadata=version)
    driver.write(v1.index_key(UID, 5), v1.encode_index(index), metadata=version)
    return entries


def test_the_reader_serves_the_entries_before_a_padding_only_block(tmp_path: Path) -> None:
    entries = pulsar_object_after_an_entry_too_large(tmp_path)
    handle = BlobStoreLedgerOffloader(FilesystemDriver(str(tmp_path))).read_offloaded(5, UID)
    assert [entry.data for entry in handle.read(0, 19)] == entries
    with pytest.raises(LostEntriesError, match=r"block 2 is cut short.*entries 20\.\.22 \(block 2\) are lost") as lost:
        handle.read(19, 21)
    assert (lost.value.first, lost.value.last) == (20, 22)


def offload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True)


def test_verify_names_the_recoverable_and_the_lost_entries(tmp_path: Path) -> None:
    pulsar_object_after_an_entry_too_large(tmp_path)
    result = offload("ledgers", "verify", f"file://{tmp_path}", "--json")
    assert result.returncode == 1
    (report,) = map(json.loads, result.stdout.splitlines())
    assert report["entries"] == 20
    assert report["defects"][-1]["problem"] == "recoverable entries 0..19, lost 20..22"
    assert "lies past the end of the data object" in report["defects"][0]["problem"]


def test_cat_prints_the_recoverable_entries_then_names_the_lost_ones(tmp_path: Path) -> None:
    entries = pulsar_object_after_an_entry_too_large(tmp_path)
    result = offload("ledgers", "cat", f"file://{tmp_path}", "5", "--json")
    assert result.returncode == 1
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["entry_id"] for row in printed] == list(range(20))
    assert [base64.b64decode(row["payload_b64"]) for row in printed] == entries
    assert "entries 20..22 (block 2) are lost" in result.stderr
