"""`offload segments ...` run as a user would, on a directory bucket."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from offload_core import BlobStoreLedgerOffloader, open_driver
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.model import Entry
from offload_core.offload import OfferResult, SegmentLimits
from tests.pulsar_vectors import load_segment_vectors

OURS = "33333333-3333-4333-8333-333333333333"
PULSARS = "44444444-4444-4444-8444-444444444444"


def offload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True)


def our_entries() -> list[Entry]:
    rng = random.Random(7)
    return [Entry(ledger, e, rng.randbytes(rng.randrange(0, 300))) for ledger, n in ((8, 50), (9, 30))
            for e in range(n)]  # fmt: skip


@pytest.fixture
def bucket(tmp_path: Path) -> str:
    url = f"file://{tmp_path / 'bucket'}"
    driver = open_driver(url)
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=4096)
    handle = offloader.streaming_offload(OURS, limits=SegmentLimits(streaming_block_size=4096, max_buffer_size=1 << 20))
    for entry in our_entries():
        assert handle.offer_entry(entry) is OfferResult.SUCCESS
    handle.close()
    assert handle.result(10) is not None
    (vector,) = load_segment_vectors()
    version = {v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION}
    driver.write("pulsar/" + v2.segment_data_key(PULSARS), vector.data, metadata=version)
    driver.write("pulsar/" + v2.segment_index_key(PULSARS), vector.index, metadata=version)
    return url


def test_ls_lists_both_segments_with_their_ledgers(bucket: str) -> None:
    result = offload("segments", "ls", bucket, "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["uuid"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert set(rows) == {OURS, PULSARS}
    assert [(lg["ledger_id"], lg["first_entry_id"]) for lg in rows[PULSARS]["ledgers"]] == [(15, 10), (16, 0)]
    assert rows[PULSARS]["ledgers"][1]["ledger_info_entries"] == 20
    assert [lg["ledger_id"] for lg in rows[OURS]["ledgers"]] == [8, 9]
    assert rows[PULSARS]["state"] == rows[OURS]["state"] == "complete"
    assert rows[PULSARS]["bytes"] == 131072
    table = offload("segments", "ls", bucket)
    assert "15:10.., 16:0.." in table.stdout


def test_cat_json_has_the_fields_of_ledgers_cat(bucket: str) -> None:
    result = offload("segments", "cat", bucket, OURS, "--json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["ledger_id"], r["entry_id"], base64.b64decode(r["payload_b64"])) for r in records] == [
        (e.ledger_id, e.entry_id, e.data) for e in our_entries()
    ]
    assert set(records[0]) == {"ledger_id", "entry_id", "tier", "size", "payload_b64"}
    only = offload("segments", "cat", bucket, PULSARS, "--ledger", "15", "--json")
    assert [json.loads(line)["entry_id"] for line in only.stdout.splitlines()] == list(range(10, 40))


def test_cat_of_a_ledger_the_segment_does_not_hold_says_what_it_holds(bucket: str) -> None:
    result = offload("segments", "cat", bucket, PULSARS, "--ledger", "3")
    assert result.returncode == 1
    assert "holds no entry of ledger 3 (it holds ledgers 15, 16)" in result.stderr


def test_a_damaged_segment_is_reported_not_hidden(bucket: str, tmp_path: Path) -> None:
    driver = open_driver(bucket)
    key = "pulsar/" + v2.segment_data_key(PULSARS)
    data = bytearray(driver.read(key))
    data[65536:65540] = b"\0\0\0\0"  # the second block's magic
    driver.write(key, bytes(data), metadata={v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION})
    result = offload("segments", "cat", bucket, PULSARS)
    assert result.returncode == 1
    assert "byte offset 65536" in result.stderr and "magic" in result.stderr
    assert len(result.stdout.splitlines()) == 30  # ledger 15's block came out whole first


def test_an_unknown_segment_is_not_found(bucket: str) -> None:
    result = offload("segments", "cat", bucket, "55555555-5555-4555-8555-555555555555")
    assert result.returncode == 1 and "offload segments ls" in result.stderr
