"""`offload ledgers ...` run as a user would, on a directory bucket."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, open_driver
from offload_core.formats import pulsar_v1 as v1
from tests.pulsar_vectors import load_vectors

U1 = "11111111-1111-4111-8111-111111111111"
U2 = "22222222-2222-4222-8222-222222222222"


def offload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True)


def entries_of(ledger_id: int) -> list[bytes]:
    rng = random.Random(ledger_id)
    return [rng.randbytes(rng.randrange(0, 300)) for _ in range(120)]


@pytest.fixture
def bucket(tmp_path: Path) -> str:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = BlobStoreLedgerOffloader(open_driver(url), max_block_size=4096)
    for ledger_id, uid in ((3, U1), (2**35, U2)):
        offloader.offload(InMemoryReadHandle(ledger_id, entries_of(ledger_id)), uuid.UUID(uid))
    return url


def test_ls_reads_entries_and_sizes_from_the_indexes(bucket: str) -> None:
    result = offload("ledgers", "ls", bucket, "--json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["ledger_id"], r["uuid"], r["entries"], r["state"]) for r in rows] == [
        (3, U1, 120, "complete"),
        (2**35, U2, 120, "complete"),
    ]
    assert rows[0]["bytes"] == sum(map(len, entries_of(3)))
    table = offload("ledgers", "ls", bucket)
    assert "34359738368" in table.stdout and "complete" in table.stdout


def test_cat_json_gives_every_entry(bucket: str) -> None:
    result = offload("ledgers", "cat", bucket, str(2**35), "--json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [base64.b64decode(r["payload_b64"]) for r in records] == entries_of(2**35)
    assert records[7] == {
        "ledger_id": 2**35,
        "entry_id": 7,
        "tier": "offloaded",
        "size": len(entries_of(2**35)[7]),
        "payload_b64": base64.b64encode(entries_of(2**35)[7]).decode(),
    }


def test_cat_range_raw_and_hex(bucket: str) -> None:
    raw = subprocess.run(
        [sys.executable, "-m", "offload_core.cli", "ledgers", "cat", bucket, "3", "--from", "10", "--to", "12"]
        + ["--raw"],
        capture_output=True,
    )
    assert raw.stdout == b"".join(entries_of(3)[10:13])
    hexed = offload("ledgers", "cat", bucket, "3", "--from", "5", "--to", "5", "--hex")
    assert hexed.stdout == f"5\t{len(entries_of(3)[5])}\t{entries_of(3)[5].hex()}\n"


def test_cat_out_of_range_is_a_clear_error(bucket: str) -> None:
    result = offload("ledgers", "cat", bucket, "3", "--from", "100", "--to", "500")
    assert result.returncode == 1
    assert "InvalidRangeError" in result.stderr and "0..119" in result.stderr


def test_verify_passes_on_good_ledgers(bucket: str) -> None:
    result = offload("ledgers", "verify", bucket)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok ") == 2
    assert "0 defect(s)" in result.stderr


def test_verify_finds_a_corrupted_block_and_names_its_location(bucket: str) -> None:
    driver = open_driver(bucket)
    key = v1.data_key(U1, 3)
    data = bytearray(driver.read(key))
    index = v1.decode_index(driver.read(v1.index_key(U1, 3)))
    third = index.entries[2]
    data[third.offset + 128 + 4] ^= 0x40  # flip a bit in the first entry id of block 3
    driver.write(key, bytes(data), metadata=driver.stat(key).metadata)
    result = offload("ledgers", "verify", bucket)
    assert result.returncode == 1
    assert f"ledger 3 ({key} at byte {third.offset})" in result.stderr
    assert "first defect" in result.stderr
    assert "ok      ledger 34359738368" in result.stdout


def test_verify_reports_an_incomplete_offload(bucket: str) -> None:
    open_driver(bucket).delete([v1.index_key(U1, 3)])
    result = offload("ledgers", "verify", bucket, "3", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["defects"][0]["problem"] == "index object is missing"


def test_two_offloads_of_one_ledger_need_a_uuid(bucket: str) -> None:
    offloader = BlobStoreLedgerOffloader(open_driver(bucket))
    offloader.offload(InMemoryReadHandle(3, [b"other attempt"]), uuid.UUID(U2))
    ambiguous = offload("ledgers", "cat", bucket, "3")
    assert ambiguous.returncode == 1 and "choose one with --uuid" in ambiguous.stderr
    chosen = offload("ledgers", "cat", bucket, "3", "--uuid", U2, "--raw")
    assert chosen.stdout == "other attempt"


def test_rm_is_a_dry_run_without_execute(bucket: str) -> None:
    before = [(info.key, info.size) for info in open_driver(bucket).list("")]
    keys = (v1.data_key(U1, 3), v1.index_key(U1, 3))
    size = sum(s for k, s in before if k in keys)
    dry = offload("ledgers", "rm", bucket, "3")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout == f"would delete ledger 3 ({U1}): {keys[0]}, {keys[1]} ({size} bytes)\n"
    assert dry.stderr.splitlines()[-1].startswith("dry run: nothing deleted; add --execute")
    as_json = json.loads(offload("ledgers", "rm", bucket, "3", "--json").stdout)
    assert as_json == {"ledger_id": 3, "uuid": U1, "dry_run": True, "bytes": size, "would_delete": list(keys)}
    assert [(info.key, info.size) for info in open_driver(bucket).list("")] == before


@pytest.mark.parametrize("flag", ["--execute", "--yes"])
def test_rm_deletes_both_objects(bucket: str, flag: str) -> None:
    result = offload("ledgers", "rm", bucket, "3", flag, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["dry_run"] is False
    assert [info.key for info in open_driver(bucket).list("")] == [v1.data_key(U2, 2**35), v1.index_key(U2, 2**35)]
    assert offload("ledgers", "rm", bucket, "3", flag).returncode == 1


def test_tools_work_on_objects_pulsar_wrote(tmp_path: Path) -> None:
    url = f"file://{tmp_path}"
    driver = open_driver(url)
    for vector in load_vectors():
        metadata = {v1.FORMAT_VERSION_KEY: "1"}
        driver.write(f"pulsar/{U1}-ledger-{vector.ledger_id}", vector.data, metadata=metadata)
        driver.write(f"pulsar/{U1}-ledger-{vector.ledger_id}-index", vector.index, metadata=metadata)
    assert offload("ledgers", "verify", url).returncode == 0
    for vector in load_vectors():
        result = offload("ledgers", "cat", url, str(vector.ledger_id), "--json")
        assert [base64.b64decode(json.loads(line)["payload_b64"]) for line in result.stdout.splitlines()] == (
            vector.entries
        )


def test_help() -> None:
    for verb in ("ls", "cat", "verify", "rm"):
        assert offload("ledgers", verb, "--help").returncode == 0


def test_verify_help_says_exactly_what_is_checked() -> None:
    from click.testing import CliRunner

    from offload_core.cli import main

    text = " ".join(CliRunner().invoke(main, ["ledgers", "verify", "--help"]).output.split())
    for checked in ("format version 1", "block length equal to the span", "first entry id", "FE DC DE AD"):
        assert checked in text
    assert "Not checked: payload bytes" in text


@pytest.mark.parametrize("flag", ["--execute", "--delete"])
def test_orphans_are_found_and_deleted_without_spark(tmp_path: Path, flag: str) -> None:
    from offload_core.managed_ledger import Broker, parse_config

    data = tmp_path / "data"
    with Broker(data, parse_config({"managedLedgerMaxEntriesPerLedger": 50})) as broker:
        topic = broker.topic("a/b/c")
        for n in range(120):
            topic.append(b"%d" % n)
        assert topic.offload_prefix().status == "success"
    bucket = f"file://{data / 'bucket'}"
    BlobStoreLedgerOffloader(open_driver(bucket), max_block_size=4096).offload(
        InMemoryReadHandle(99, entries_of(99)), uuid.UUID(U1)
    )
    before = {info.key: info.size for info in open_driver(bucket).list("")}
    size = sum(s for k, s in before.items() if U1 in k)
    listed = offload("ledgers", "orphans", bucket, "--data-dir", str(data), "--json")
    assert listed.returncode == 0, listed.stderr
    (orphan,) = map(json.loads, listed.stdout.splitlines())
    assert (orphan["ledger_id"], orphan["uuid"], orphan["action"], orphan["dry_run"]) == (99, U1, "delete", True)
    assert orphan["bytes"] == size
    assert f"1 orphan ledger(s) found, {size} bytes" in listed.stderr
    assert listed.stderr.splitlines()[-1].startswith("dry run: nothing deleted; add --execute")
    text = offload("ledgers", "orphans", bucket, "--data-dir", str(data))
    assert text.stdout == f"{99:>12}  {U1}  {size:>12} bytes  would delete\n"
    assert {info.key: info.size for info in open_driver(bucket).list("")} == before
    deleted = offload("ledgers", "orphans", bucket, "--data-dir", str(data), flag, "--json")
    assert deleted.returncode == 0 and "1 orphan ledger(s) deleted" in deleted.stderr
    assert json.loads(deleted.stdout)["dry_run"] is False and "dry run" not in deleted.stderr
    remaining = {info.key for info in open_driver(bucket).list("")}
    assert not any(U1 in key for key in remaining) and len(remaining) == 4  # two referenced ledgers, two objects each
    assert offload("ledgers", "orphans", bucket, "--data-dir", str(tmp_path / "nowhere")).returncode != 0


def test_rm_refuses_a_ledger_a_topic_still_refers_to(tmp_path: Path) -> None:
    from offload_core.managed_ledger import Broker, parse_config

    data = tmp_path / "data"
    with Broker(data, parse_config({"managedLedgerMaxEntriesPerLedger": 50})) as broker:
        topic = broker.topic("a/b/c")
        for n in range(120):
            topic.append(b"%d" % n)
        assert topic.offload_prefix().status == "success"
    bucket = f"file://{data / 'bucket'}"
    before = {info.key for info in open_driver(bucket).list("")}
    for extra in ((), ("--execute",)):
        refused = offload("ledgers", "rm", bucket, "1", "--data-dir", str(data), *extra)
        assert refused.returncode == 1 and refused.stdout == ""
        (line,) = refused.stderr.splitlines()
        assert line.startswith("Error: ConfigError: ledger 1 (")
        assert " is still read by topic a/b/c (its metadata in " in line
        assert "--even-if-referenced" in line
    assert {info.key for info in open_driver(bucket).list("")} == before
    forced = offload("ledgers", "rm", bucket, "1", "--data-dir", str(data), "--execute", "--even-if-referenced")
    assert forced.returncode == 0, forced.stderr
    assert len({info.key for info in open_driver(bucket).list("")}) == len(before) - 2


def test_rm_says_when_references_could_not_be_checked(bucket: str, tmp_path: Path) -> None:
    dry = offload("ledgers", "rm", bucket, "3", "--data-dir", str(tmp_path / "nowhere"))
    assert dry.returncode == 0, dry.stderr
    assert f"no broker metadata at {tmp_path / 'nowhere' / 'metadata.db'}" in dry.stderr
    assert "could not be checked" in dry.stderr
