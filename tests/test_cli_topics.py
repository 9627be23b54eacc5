"""`offload topics ...` and `offload namespaces ...` as a user runs them."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "offload_core.cli",
            *args,
            "--data-dir",
            str(tmp_path / "data"),
            "--config",
            str(tmp_path / "broker.toml"),
        ],
        capture_output=True,
        text=True,
    )


@pytest.fixture
def produced(tmp_path: Path) -> Path:
    (tmp_path / "broker.toml").write_text(
        "managedLedgerMaxEntriesPerLedger = 200\nmanagedLedgerOffloadDeletionLagMs = 3600000\n"
    )
    result = run(tmp_path, "topics", "produce", "acme/prod/orders", "--count", "700", "--size", "64")
    assert result.returncode == 0, result.stderr
    assert "appended 700 messages: 1:0 .. 4:99" in result.stdout
    return tmp_path


def consume(tmp_path: Path, *args: str) -> list[dict[str, object]]:
    result = run(tmp_path, "topics", "consume", "acme/prod/orders", "--count", "1000", "--json", *args)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_produce_offload_consume_with_tiers(produced: Path) -> None:
    before = consume(produced)
    assert len(before) == 700 and {r["tier"] for r in before} == {"hot"}
    assert all(len(base64.b64decode(str(r["payload_b64"]))) == 64 for r in before)

    offloaded = run(produced, "topics", "offload", "acme/prod/orders", "--position", "3:0")
    assert offloaded.returncode == 0, offloaded.stderr
    assert "offloaded ledgers: 2" in offloaded.stdout and "first unoffloaded position: 3:0" in offloaded.stdout

    after = consume(produced)
    assert [r["payload_b64"] for r in after] == [r["payload_b64"] for r in before]
    assert [r["tier"] for r in after] == ["offloaded"] * 400 + ["hot"] * 300
    hot_first = consume(produced, "--priority", "bookkeeper-first")
    assert {r["tier"] for r in hot_first} == {"hot"}
    window = consume(produced, "--from", "2:199", "--priority", "OFFLOADED_FIRST")
    assert [(r["ledger_id"], r["entry_id"]) for r in window[:2]] == [(2, 199), (3, 0)]


def test_list_names_every_topic(produced: Path) -> None:
    assert run(produced, "topics", "produce", "acme/dev/clicks", "--count", "1").returncode == 0
    listed = run(produced, "topics", "list")
    assert listed.stdout.splitlines() == ["acme/dev/clicks", "acme/prod/orders"]
    listed_json = [json.loads(line) for line in run(produced, "topics", "list", "--json").stdout.splitlines()]
    assert listed_json == [{"topic": "acme/dev/clicks"}, {"topic": "acme/prod/orders"}]


def test_stats_and_offload_status(produced: Path) -> None:
    assert json.loads(run(produced, "topics", "offload-status", "acme/prod/orders", "--json").stdout)["status"] == (
        "not-run"
    )
    offloaded = run(produced, "topics", "offload", "acme/prod/orders", "--json")
    lines = [json.loads(line) for line in offloaded.stdout.splitlines()]
    assert [line["ledger_id"] for line in lines[:-1]] == [1, 2, 3, 4] and lines[-1]["status"] == "success"
    assert all(line["offloaded"] for line in lines[:-1]) and lines[0]["entries"] == 200
    stats = [json.loads(line) for line in run(produced, "topics", "stats", "acme/prod/orders", "--json").stdout
             .splitlines()]  # fmt: skip
    assert [(lg["entries"], lg["tier"]) for lg in stats] == [(200, "hot+offloaded")] * 3 + [(100, "hot+offloaded")]
    assert {lg["topic"] for lg in stats} == {"acme/prod/orders"}
    status = json.loads(run(produced, "topics", "offload-status", "acme/prod/orders", "--json").stdout)
    assert status == {"status": "success", "first_unoffloaded": None, "offloaded_ledgers": 4, "error": None,
                      "unfinished": []}  # fmt: skip
    table = run(produced, "topics", "stats", "acme/prod/orders").stdout
    assert "hot+offloaded" in table and "LEDGER" in table


def test_read_priority_policies_at_namespace_and_topic_level(produced: Path) -> None:
    run(produced, "topics", "offload", "acme/prod/orders")
    assert {r["tier"] for r in consume(produced)} == {"offloaded"}
    assert run(produced, "namespaces", "set-tiered-read-priority", "acme/prod", "bookkeeper-first").returncode == 0
    assert {r["tier"] for r in consume(produced)} == {"hot"}
    got = json.loads(run(produced, "topics", "get-tiered-read-priority", "acme/prod/orders", "--json").stdout)
    assert got == {"topic": "acme/prod/orders", "set": None, "effective": "BOOKKEEPER_FIRST"}
    assert (
        run(produced, "topics", "set-tiered-read-priority", "acme/prod/orders", "tiered-storage-first").returncode == 0
    )
    assert {r["tier"] for r in consume(produced)} == {"offloaded"}
    run(produced, "topics", "remove-tiered-read-priority", "acme/prod/orders")
    run(produced, "namespaces", "remove-tiered-read-priority", "acme/prod")
    got = json.loads(run(produced, "namespaces", "get-tiered-read-priority", "acme/prod", "--json").stdout)
    assert got == {"namespace": "acme/prod", "set": None, "effective": "OFFLOADED_FIRST"}


def test_only_priority_that_cannot_be_honoured_is_a_clear_error(produced: Path) -> None:
    result = run(produced, "topics", "consume", "acme/prod/orders", "--priority", "offloaded-only")
    assert result.returncode == 1
    assert "OFFLOADED_ONLY never reads the other tier" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["topics", "consume", "acme/prod/orders", "--priority", "fastest"], "not one of"),
        (["topics", "consume", "acme/prod/orders", "--from", "x"], "not LEDGER:ENTRY"),
        (["topics", "consume", "no-namespace"], "tenant/namespace/topic"),
        (["namespaces", "set-tiered-read-priority", "acme", "bookkeeper-first"], "not tenant/namespace"),
    ],
)
def test_bad_input_is_a_clear_error(produced: Path, args: list[str], message: str) -> None:
    result = run(produced, *args)
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


def test_unknown_config_key(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text("managedLedgerOffloadDriverr = 'filesystem'\n")
    result = run(tmp_path, "topics", "stats", "acme/prod/orders")
    assert result.returncode == 1
    assert "did you mean 'managedLedgerOffloadDriver'" in result.stderr


def test_help_everywhere() -> None:
    for args in (["topics"], ["namespaces"], ["topics", "produce"], ["topics", "set-tiered-read-priority"]):
        result = subprocess.run([sys.executable, "-m", "offload_core.cli", *args, "--help"], capture_output=True)
        assert result.returncode == 0


def test_run_maintenance_offloads_by_threshold(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text(
        "managedLedgerMaxEntriesPerLedger = 100\nmanagedLedgerOffloadThresholdInBytes = 0\n"
        "managedLedgerOffloadDeletionLagMs = 0\n"
    )
    # With threshold 0 every ledger is offloaded as it seals, even while producing.
    assert run(tmp_path, "topics", "produce", "a/b/c", "--count", "250").returncode == 0
    result = run(tmp_path, "topics", "run-maintenance", "a/b/c")
    assert result.returncode == 0, result.stderr
    assert "offloaded by threshold: 1 ledger(s)" in result.stdout  # the ledger sealed on reopen
    stats = [json.loads(line) for line in run(tmp_path, "topics", "stats", "a/b/c", "--json").stdout.splitlines()]
    assert [lg["tier"] for lg in stats] == ["offloaded"] * 3


@pytest.mark.parametrize("name", ["pub/def/" + "x" * 5000, "pub/def/\uff43"])
def test_bad_topic_names_are_one_line_errors(tmp_path: Path, name: str) -> None:
    (tmp_path / "broker.toml").write_text("")
    result = run(tmp_path, "topics", "produce", name, "--count", "1")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "limit is 200" in result.stderr or "ASCII" in result.stderr
    assert not (tmp_path / "data" / "locks").exists() or not list((tmp_path / "data" / "locks").iterdir())


def refused_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: connecting to it is refused


@pytest.mark.parametrize("endpoint", ["not a url", "http://127.0.0.1:{port}"])
def test_a_failed_offload_never_locks_the_topic(tmp_path: Path, endpoint: str) -> None:
    (tmp_path / "broker.toml").write_text("managedLedgerMaxEntriesPerLedger = 50\n")
    assert run(tmp_path, "topics", "produce", "a/b/c", "--count", "120", "--size", "32").returncode == 0
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'managedLedgerMaxEntriesPerLedger = 50\nmanagedLedgerOffloadDriver = "aws-s3"\n'
        'managedLedgerOffloadBucket = "cold-bucket"\n'
        f'managedLedgerOffloadServiceEndpoint = "{endpoint.format(port=refused_port())}"\n'
    )
    failed = subprocess.run(
        [sys.executable, "-m", "offload_core.cli", "topics", "offload", "a/b/c", "--data-dir",
         str(tmp_path / "data"), "--config", str(bad)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert failed.returncode != 0
    assert "Traceback" not in failed.stderr
    if endpoint == "not a url":
        assert "ConfigError" in failed.stderr + failed.stdout and "http://" in failed.stderr + failed.stdout
    # Without the bad config, every verb still works on the topic.
    for verb in (["stats"], ["consume", "--count", "5"], ["produce", "--count", "3"], ["offload-status"]):
        result = run(tmp_path, "topics", verb[0], "a/b/c", *verb[1:])
        assert result.returncode == 0, (verb, result.stderr)
    status = run(tmp_path, "topics", "offload-status", "a/b/c").stdout
    if endpoint != "not a url":
        # The store stayed unreachable, so the ticket could not be cleaned: shown, then cleared by hand.
        assert "unfinished offload: ledger 1" in status and "clear-offload" in status
        dry = run(tmp_path, "topics", "clear-offload", "a/b/c", "--force")
        assert dry.returncode == 0 and "would delete the objects of ledger 1's unfinished offload" in dry.stdout
        assert dry.stderr.splitlines()[-1].startswith("dry run: nothing deleted; add --execute")
        assert "unfinished offload: ledger 1" in run(tmp_path, "topics", "offload-status", "a/b/c").stdout
        assert run(tmp_path, "topics", "clear-offload", "a/b/c", "--execute").returncode != 0
        cleared = run(tmp_path, "topics", "clear-offload", "a/b/c", "--force", "--execute")
        assert cleared.returncode == 0 and "objects maybe left behind" in cleared.stdout
        assert "unfinished" not in run(tmp_path, "topics", "offload-status", "a/b/c").stdout
    # And with the default store it offloads.
    offloaded = run(tmp_path, "topics", "offload", "a/b/c")
    assert offloaded.returncode == 0, offloaded.stderr
    assert "status: success" in offloaded.stdout


def test_produce_reports_each_sealed_ledger_and_json_everywhere(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text("managedLedgerMaxEntriesPerLedger = 100\n")
    result = run(tmp_path, "topics", "produce", "a/b/c", "--count", "250", "--json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[:2] == [{"ledger_id": 1, "entries": 100, "sealed": True}, {"ledger_id": 2, "entries": 100,
                                                                             "sealed": True}]  # fmt: skip
    assert lines[-1] == {"appended": 250, "first": "1:0", "last": "3:49"}
    text = run(tmp_path, "topics", "produce", "a/b/c", "--count", "10")
    assert "sealed ledger 3 (50 entries)" in text.stderr  # the reopen seals the ledger left current
    consumed = json.loads(run(tmp_path, "topics", "consume", "a/b/c", "--count", "1", "--json").stdout)
    bucket = tmp_path / "data" / "bucket"
    assert run(tmp_path, "topics", "offload", "a/b/c").returncode == 0
    cat = subprocess.run([sys.executable, "-m", "offload_core.cli", "ledgers", "cat", f"file://{bucket}", "1",
                          "--to", "0", "--json"], capture_output=True, text=True)  # fmt: skip
    from_cat = json.loads(cat.stdout)
    assert set(consumed) >= {"ledger_id", "entry_id", "tier", "size", "payload_b64"}
    assert set(from_cat) == {"ledger_id", "entry_id", "tier", "size", "payload_b64"}
    assert from_cat["tier"] == "offloaded"
    rm = subprocess.run([sys.executable, "-m", "offload_core.cli", "ledgers", "rm", f"file://{bucket}", "1",
                         "--yes", "--json"], capture_output=True, text=True)  # fmt: skip
    assert json.loads(rm.stdout)["ledger_id"] == 1 and len(json.loads(rm.stdout)["deleted"]) == 2
