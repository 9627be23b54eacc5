"""Streaming offload (PIP-76) from the command line: the policy verbs, a
topic streamed as it is produced, its segments in stats and on the store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.test_cli_topics import run


def offload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True)


def test_set_get_remove_streaming_at_both_levels(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text("maxSizePerOffloadSegmentMbytes = 256\n")
    result = run(
        tmp_path, "namespaces", "set-offload-streaming", "acme/prod", "--enable", "--max-segment-rollover", "2h"
    )
    assert result.returncode == 0, result.stderr
    shown = run(tmp_path, "topics", "get-offload-streaming", "acme/prod/orders", "--json")
    policies = json.loads(shown.stdout)["policies"]
    assert policies["streaming_enabled"] == {"value": True, "from": "namespace"}
    assert policies["segment_rollover_minutes"] == {"value": 120, "from": "namespace"}
    assert policies["segment_max_size_mb"] == {"value": 256, "from": "broker"}
    run(tmp_path, "topics", "set-offload-streaming", "acme/prod/orders", "--disable", "--max-segment-size", "64M")
    policies = json.loads(run(tmp_path, "topics", "get-offload-streaming", "acme/prod/orders", "--json").stdout)[
        "policies"
    ]
    assert policies["streaming_enabled"] == {"value": False, "from": "topic"}
    assert policies["segment_max_size_mb"] == {"value": 64, "from": "topic"}
    assert run(tmp_path, "topics", "remove-offload-streaming", "acme/prod/orders").returncode == 0
    policies = json.loads(run(tmp_path, "topics", "get-offload-streaming", "acme/prod/orders", "--json").stdout)[
        "policies"
    ]
    assert policies["streaming_enabled"] == {"value": True, "from": "namespace"}
    refused = run(tmp_path, "topics", "set-offload-streaming", "acme/prod/orders", "--buffer-size", "1M")
    assert refused.returncode == 1 and "must hold two blocks" in refused.stderr
    assert run(tmp_path, "topics", "set-offload-streaming", "acme/prod/orders").returncode == 2


def test_a_streamed_topic_shows_its_segments_and_they_are_on_the_store(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text(
        "managedLedgerMaxEntriesPerLedger = 200\nmanagedLedgerOffloadStreamingEnabled = true\n"
        "managedLedgerOffloadMaxBlockSizeInBytes = 65536\nmanagedLedgerOffloadDeletionLagMs = 0\n"
    )
    produced = run(tmp_path, "topics", "produce", "acme/prod/orders", "--count", "500", "--size", "64")
    assert produced.returncode == 0, produced.stderr
    # Closing the broker completed the open segment: every entry is on the store.
    stats = run(tmp_path, "topics", "stats", "acme/prod/orders", "--json")
    lines = [json.loads(line) for line in stats.stdout.splitlines()]
    segments = [line["segment"] for line in lines if "segment" in line]
    (segment,) = segments
    assert segment["status"] == "complete" and segment["bytes"] > 500 * 64
    assert [tuple(held) for held in segment["ledgers"]] == [(1, 0, 199), (2, 0, 199), (3, 0, 99)]
    assert "complete" in run(tmp_path, "topics", "stats", "acme/prod/orders").stdout
    bucket = f"file://{tmp_path / 'data' / 'bucket'}"
    listed = [json.loads(line) for line in offload("segments", "ls", bucket, "--json").stdout.splitlines()]
    assert [row["uuid"] for row in listed] == [segment["uuid"]]
    entries = offload("segments", "cat", bucket, segment["uuid"], "--ledger", "3", "--json").stdout.splitlines()
    assert [json.loads(line)["entry_id"] for line in entries] == list(range(100))
    consumed = run(tmp_path, "topics", "consume", "acme/prod/orders", "--count", "1000", "--json")
    records = [json.loads(line) for line in consumed.stdout.splitlines()]
    assert len(records) == 500 and {r["tier"] for r in records[:400]} == {"offloaded"}
