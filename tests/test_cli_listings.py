"""One table style and one vocabulary across the listings (issue 43): every
``ls`` is an aligned table under upper-case headers, in log order; a
complete segment is ``complete`` in ``topics stats`` as in ``segments ls``;
``--priority`` lists its values; the demo's word on the ledger it leaves
open is what ``topics stats`` then shows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from offload_core import BlobStoreLedgerOffloader, open_driver
from offload_core.managed_ledger import ReadPriority
from offload_core.model import Entry
from offload_core.offload import OfferResult, SegmentLimits
from tests.rsm.segments import numbered_segments, write_partition
from tests.test_cli_kafka import offload as kafka
from tests.test_cli_segments import offload

ROOT = Path(__file__).resolve().parent.parent


def column_starts(header: str, words: list[str]) -> list[int]:
    return [header.index(word) for word in words]


def test_kafka_ls_is_an_aligned_table_in_log_order(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'store'}"
    directory = write_partition(tmp_path, "orders-0", numbered_segments(3))
    assert kafka("copy", str(directory), url, "--all").returncode == 0
    listed = kafka("ls", url)
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert "\t" not in listed.stdout and header == header.upper()
    assert header.split() == ["PARTITION", "TOPIC", "ID", "BASE", "END", "MAX", "TIMESTAMP", "BYTES", "SEGMENT", "ID",
                              "STATE"]  # fmt: skip
    state = header.index("STATE")
    assert [row[state:] for row in rows] == ["COPY_SEGMENT_FINISHED"] * 3
    base_end = header.index("BASE") + len("BASE")
    assert [int(row[:base_end].split()[-1]) for row in rows] == [0, 100, 200]
    as_json = [json.loads(line) for line in kafka("ls", url, "--json").stdout.splitlines()]
    assert [row["base_offset"] for row in as_json] == [0, 100, 200]


def write_segment(url: str, uuid: str, ledger: int) -> None:
    offloader = BlobStoreLedgerOffloader(open_driver(url), max_block_size=4096)
    handle = offloader.streaming_offload(uuid, limits=SegmentLimits(streaming_block_size=4096, max_buffer_size=1 << 20))
    for entry_id in range(20):
        assert handle.offer_entry(Entry(ledger, entry_id, b"x" * 50)) is OfferResult.SUCCESS
    handle.close()
    assert handle.result(10) is not None


def test_segments_ls_lists_in_log_order_not_by_uuid(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    # uuids in the reverse of the log's order
    for uuid, ledger in (("ffffffff-0000-4000-8000-000000000000", 3), ("88888888-0000-4000-8000-000000000000", 5),
                         ("11111111-0000-4000-8000-000000000000", 9)):  # fmt: skip
        write_segment(url, uuid, ledger)
    listed = offload("segments", "ls", url)
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert [row.split()[0][:2] for row in rows] == ["ff", "88", "11"]
    as_json = [json.loads(line) for line in offload("segments", "ls", url, "--json").stdout.splitlines()]
    assert [row["ledgers"][0]["ledger_id"] for row in as_json] == [3, 5, 9]


def test_a_complete_segment_has_one_name_in_topics_stats_and_segments_ls(tmp_path: Path) -> None:
    config = tmp_path / "broker.toml"
    config.write_text("managedLedgerOffloadStreamingEnabled = true\n")
    broker = ["--data-dir", str(tmp_path / "data"), "--config", str(config)]
    assert offload("topics", "produce", "acme/prod/orders", "--count", "50", "--size", "64", *broker).returncode == 0
    stats = offload("topics", "stats", "acme/prod/orders", *broker)
    segment_header = next(line for line in stats.stdout.splitlines() if line.startswith("SEGMENT"))
    segment_row = stats.stdout.splitlines()[-1]
    (row,) = [json.loads(line) for line in offload("segments", "ls", f"file://{tmp_path / 'data' / 'bucket'}",
                                                   "--json").stdout.splitlines()]  # fmt: skip
    assert row["state"] == "complete"
    assert segment_row[segment_header.index("STATE") :] == "complete"
    stats_lines = offload("topics", "stats", "acme/prod/orders", "--json", *broker).stdout.splitlines()
    (stats_json,) = [json.loads(line)["segment"] for line in stats_lines if "segment" in line]
    assert stats_json["status"] == "complete"


def test_priority_help_lists_every_value() -> None:
    for verb in (["topics", "consume"], ["namespaces", "set-tiered-read-priority"],
                 ["topics", "set-offload-policies"]):  # fmt: skip
        shown = " ".join(offload(*verb, "--help").stdout.split()).replace("- ", "-")
        assert all(priority.value in shown for priority in ReadPriority), (verb, shown)
        assert "tiered-storage-first" in shown


def test_the_demo_says_which_ledger_is_still_written_and_topics_stats_agrees(tmp_path: Path) -> None:
    ran = subprocess.run([sys.executable, str(ROOT / "examples" / "main_job.py"), "--data-dir", str(tmp_path),
                          "--messages", "2000"], capture_output=True, text=True)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    (line,) = [line for line in ran.stdout.splitlines() if line.startswith("Phase 3")]
    assert "the next open of the topic seals it" in line
    ledger_id = int(line.split("; ledger ")[1].split()[0])
    stats = offload("topics", "stats", "demo/orders/stream", "--data-dir", str(tmp_path / "main-job"), "--json")
    ledgers = {row["ledger_id"]: row for row in map(json.loads, stats.stdout.splitlines()) if "ledger_id" in row}
    assert ledgers[ledger_id]["sealed"]
