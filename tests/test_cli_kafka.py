"""`offload kafka ...` run as a user would: the Kafka-written fixtures
round-trip through copy --all, read --json and fetch-index byte for byte."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cramjam
import pytest
from click.testing import CliRunner

from offload_core.cli import main
from offload_core.formats import kafka
from tests.kafka_vectors import KafkaCase, b64, kafka_cases
from tests.legacy_message_sets import upgraded_topic
from tests.rsm.segments import (
    TOPIC_ID,
    SegmentSpec,
    fixture_partition,
    numbered_segments,
    recompressed,
    transactional_segment,
    undecided_transaction_segments,
    write_partition,
)

CASES = kafka_cases()
INDEX_KINDS = {"offset": "offset_index", "timestamp": "time_index", "producer-snapshot": "producer_snapshot",
               "leader-epoch": "rlm_leader_epoch_index"}  # fmt: skip


@dataclass
class Ran:
    returncode: int
    stdout: Any
    stderr: str


def offload(*args: str, binary: bool = False) -> Ran:
    """The command in this process (plugins load once, not once a call)."""
    result = CliRunner().invoke(main, ["kafka", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout_bytes if binary else result.stdout, result.stderr)


def offload_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it."""
    return subprocess.run([sys.executable, "-m", "offload_core.cli", "kafka", *args], capture_output=True, text=True)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fixture_round_trips_through_the_cli(tmp_path: Path, case: KafkaCase) -> None:
    directory = fixture_partition(case, tmp_path)
    url = f"file://{tmp_path / 'store'}"
    tp = directory.name
    first = offload("copy", str(directory), url)
    assert first.returncode == 0, first.stderr
    assert "copied 0 segment(s)" in first.stdout and "--all" in first.stdout  # the active segment is left alone
    copied = offload_process("copy", str(directory), url, "--all")
    assert copied.returncode == 0 and "copied 1 segment(s)" in copied.stdout, copied.stderr
    again = offload("copy", str(directory), url, "--all")
    assert "copied 0 segment(s), 1 already there" in again.stdout

    read = offload_process("read", url, tp, "--offset", "0", "--json")
    assert read.returncode == 0, read.stderr
    records = [json.loads(line) for line in read.stdout.splitlines()]
    expected = [r for batch in case.spec["batches"] for r in batch["records"]]
    assert [r["offset"] for r in records] == [r["offset"] for r in expected]
    for got, want in zip(records, expected, strict=True):
        assert got["timestamp"] == want["timestamp"]
        assert (got["key_b64"], got["value_b64"]) == (want["key"], want["value"])
        assert [(h["key"], h["value_b64"]) for h in got["headers"]] == [(h["key"], h["value"]) for h in want["headers"]]
        assert b64(got["value_b64"]) == b64(want["value"])

    for kind, file_kind in INDEX_KINDS.items():
        fetched = offload("fetch-index", url, tp, "0", "--type", kind, binary=True)
        assert fetched.returncode == 0, fetched.stderr
        assert fetched.stdout == case.file(file_kind)
    missing = offload("fetch-index", url, tp, "0", "--type", "transaction")
    assert missing.returncode == 1 and "no TRANSACTION index" in missing.stderr

    for lookup in case.spec["timestamp_lookups"][:10]:
        answer = json.loads(offload("offsets", url, tp, "--timestamp", str(lookup["target_timestamp"])).stdout)
        found = lookup["found"]
        assert answer == ({"offset": found["offset"], "timestamp": found["timestamp"]} if found
                          else {"offset": None, "timestamp": None})  # fmt: skip

    listed = [json.loads(line) for line in offload("ls", url, "--json").stdout.splitlines()]
    assert [(r["topic_partition"], r["base_offset"], r["end_offset"], r["bytes"]) for r in listed] == [
        (tp, 0, case.spec["log_end_offset"] - 1, case.spec["segment_size_bytes"])
    ]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_raw_snappy_batches_copy_and_read(tmp_path: Path, case: KafkaCase) -> None:
    batches = recompressed(case.log, kafka.Compression.SNAPPY, lambda data: bytes(cramjam.snappy.compress_raw(data)))
    directory = write_partition(tmp_path, "rawsnappy-0", [SegmentSpec(batches)])
    url = f"file://{tmp_path / 'store'}"
    copied = offload("copy", str(directory), url, "--all")
    assert copied.returncode == 0, copied.stderr
    read = offload("read", url, "rawsnappy-0", "--offset", "0", "--json")
    assert read.returncode == 0, read.stderr
    records = [json.loads(line) for line in read.stdout.splitlines()]
    expected = [r for batch in case.spec["batches"] for r in batch["records"]]
    assert [(r["offset"], r["timestamp"], r["key_b64"], r["value_b64"]) for r in records] == [
        (r["offset"], r["timestamp"], r["key"], r["value"]) for r in expected
    ]


def test_magic_0_and_1_segments_copy_and_read_like_v2(tmp_path: Path) -> None:
    segments, expected = upgraded_topic()
    directory = write_partition(tmp_path, "old-0", [SegmentSpec(entries) for entries in segments])
    url = f"file://{tmp_path / 'store'}"
    copied = offload("copy", str(directory), url, "--all")
    assert copied.returncode == 0 and "copied 3 segment(s)" in copied.stdout, copied.stderr
    listed = [json.loads(line) for line in offload("ls", url, "--json").stdout.splitlines()]
    assert [(r["base_offset"], r["end_offset"], r["leader_epochs"]) for r in listed] == [
        (0, 14, {"0": 0}),
        (15, 27, {"0": 15}),
        (28, 32, {"0": 28}),
    ]
    read = offload("read", url, "old-0", "--offset", "0", "--json")
    assert read.returncode == 0, read.stderr
    assert [json.loads(line) for line in read.stdout.splitlines()] == [
        {"offset": o, "timestamp": t, "key_b64": _b64(k), "value_b64": _b64(v), "headers": []}
        for o, t, k, v, _ in expected
    ]
    inside_a_wrapper = offload("read", url, "old-0", "--offset", "7", "--json").stdout.splitlines()
    assert [json.loads(line)["offset"] for line in inside_a_wrapper] == [o for o, *_ in expected][7:]
    first_timed = next((o, t) for o, t, *_ in expected if t >= 1_500_000_000_170)
    answer = json.loads(offload("offsets", url, "old-0", "--timestamp", "1500000000170").stdout)
    assert (answer["offset"], answer["timestamp"]) == first_timed


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode()


def test_read_from_an_offset_with_max_bytes_and_read_committed(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "txn-0", [transactional_segment()])
    url = f"file://{tmp_path / 'store'}"
    assert offload("copy", str(directory), url, "--all").returncode == 0
    every = [
        json.loads(line)["offset"]
        for line in offload("read", url, "txn-0", "--offset", "1", "--json").stdout.splitlines()
    ]
    assert every == [1, 2, 4, 5, 7, 8]
    committed = offload("read", url, "txn-0", "--offset", "0", "--json", "--isolation", "read_committed").stdout
    assert [json.loads(line)["offset"] for line in committed.splitlines()] == [0, 1, 2, 7, 8]
    one_batch = offload("read", url, "txn-0", "--offset", "0", "--max-bytes", "1", "--json").stdout
    assert [json.loads(line)["offset"] for line in one_batch.splitlines()] == [0, 1, 2]
    plain = offload("read", url, "txn-0", "--offset", "7").stdout.splitlines()
    assert plain[0].split("\t")[:3] == ["7", "1700000000007", "key-7"]


def test_copy_skips_an_empty_active_segment(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "orders-0", [*numbered_segments(1), SegmentSpec([])])
    url = f"file://{tmp_path / 'store'}"
    copied = offload("copy", str(directory), url, "--all")
    assert copied.returncode == 0, copied.stderr
    assert "copied 1 segment(s), 0 already there, 1 empty segment(s) skipped" in copied.stdout
    listed = [json.loads(line) for line in offload("ls", url, "--json").stdout.splitlines()]
    assert [(r["base_offset"], r["end_offset"]) for r in listed] == [(0, 99)]


def test_read_committed_stops_at_the_last_stable_offset_and_says_so(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "txn-0", undecided_transaction_segments())
    url = f"file://{tmp_path / 'store'}"
    assert offload("copy", str(directory), url).returncode == 0  # the rolled segment only: the marker stays local
    committed = offload("read", url, "txn-0", "--offset", "0", "--json", "--isolation", "read_committed")
    assert committed.returncode == 0
    assert [json.loads(line)["offset"] for line in committed.stdout.splitlines()] == [0, 1]
    assert "stops before offset 2, the last stable offset: producer 77's transaction" in committed.stderr
    everything = offload("read", url, "txn-0", "--offset", "0", "--json")
    assert [json.loads(line)["offset"] for line in everything.stdout.splitlines()] == list(range(7))
    assert everything.stderr == ""


def test_fetch_index_refuses_a_cut_or_altered_index(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(1, batches=60))
    url = f"file://{tmp_path / 'store'}"
    assert offload("copy", str(directory), url, "--all").returncode == 0
    store = tmp_path / "store" / f"orders-0-{TOPIC_ID}"
    (index,) = store.glob("*.index")
    (time_index,) = store.glob("*.timeindex")
    good = index.read_bytes()
    assert offload("fetch-index", url, "orders-0", "0", "--type", "offset", binary=True).stdout == good
    log = next(store.glob("*.log")).read_bytes()
    entries = kafka.decode_offset_index(good, 0)
    moved = entries[:3] + [
        kafka.IndexEntry(
            entries[3].offset, entries[3].position + kafka.decode_batch_header(log, entries[3].position).size_in_bytes
        )
    ]
    last_batch = 0
    while (after := last_batch + kafka.decode_batch_header(log, last_batch).size_in_bytes) < len(log):
        last_batch = after
    inside_last = kafka.IndexEntry(kafka.decode_batch_header(log, last_batch).base_offset, last_batch + 5)
    inside = kafka.encode_offset_index(entries[:-1] + [inside_last], 0)
    for damaged, file, kind in ((good[:-8], index, "offset"), (time_index.read_bytes()[:-12], time_index, "timestamp"),
                                (kafka.encode_offset_index(moved + entries[4:], 0), index, "offset"),
                                (inside, index, "offset")):  # fmt: skip
        original = file.read_bytes()
        file.write_bytes(damaged)
        fetched = offload("fetch-index", url, "orders-0", "0", "--type", kind, binary=True)
        file.write_bytes(original)
        assert fetched.returncode == 1 and fetched.stdout == b""
        assert fetched.stderr.count("\n") == 1 and f"FormatError: {file.relative_to(tmp_path / 'store')}" in (
            fetched.stderr.replace("remote offset index ", "")
        ), fetched.stderr


def test_reading_at_or_past_the_end_and_special_timestamps(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(2))
    url = f"file://{tmp_path / 'store'}"
    assert offload("copy", str(directory), url, "--all").returncode == 0  # offsets 0..199
    at_end = offload("read", url, "orders-0", "--offset", "200")
    assert at_end.returncode == 0 and at_end.stdout == ""
    assert "offset 200 is the end of the remote log of orders-0 (its last offset is 199): nothing to read" in (
        at_end.stderr
    )
    past = offload("read", url, "orders-0", "--offset", "250")
    assert past.returncode == 1 and past.stdout == ""
    assert "InvalidRangeError: offset 250 is past the end of the remote log of orders-0 (offsets 0..199)" in (
        past.stderr
    )
    assert offload("read", url, "orders-0", "--offset", "199").stderr == ""

    def answer(timestamp: str) -> Ran:
        return offload("offsets", url, "orders-0", "--timestamp", timestamp)

    assert json.loads(answer("-2").stdout) == {"offset": 0, "timestamp": -1}
    assert json.loads(answer("-1").stdout) == {"offset": 200, "timestamp": -1}
    # The last batch (offsets 195-199) stamps its records 1_700_000_195_000 + 0..4 ms.
    assert json.loads(answer("-3").stdout) == {"offset": 199, "timestamp": 1_700_000_195_004}
    refused = answer("-5")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "timestamp -5 is neither milliseconds since the epoch nor one of Kafka's" in refused.stderr


def test_cleanup_and_errors(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(3))
    url = f"file://{tmp_path / 'store'}"
    metadata = str(tmp_path / "rlmm.sqlite")
    assert offload("copy", str(directory), url, "--metadata", metadata).returncode == 0
    rows = [json.loads(line) for line in offload("ls", url, "orders-0", "--json").stdout.splitlines()]
    assert [r["base_offset"] for r in rows] == [0, 100]
    # Segment 0's newest record is at 1_700_000_000_000 + 99 s.
    until = ("--until", "2023-11-14T22:15:00Z", "--metadata", metadata)
    dry = offload("cleanup", url, "orders-0", *until)
    assert dry.returncode == 0, dry.stderr
    summary = json.loads(dry.stdout)
    assert summary == {"dry_run": True, "segments": 1, "bytes": rows[0]["bytes"], "deleted_segments": 0,
                       "log_start_offset": 100}  # fmt: skip
    assert (
        f"would delete segment 0-99 of orders-0 (topic id {rows[0]['topic_id']}) ({rows[0]['bytes']} bytes"
        in dry.stderr
    )
    assert dry.stderr.splitlines()[-1].startswith("dry run: nothing deleted; add --execute")
    as_json = offload("cleanup", url, "orders-0", *until, "--json")
    assert as_json.returncode == 0, as_json.stderr
    segment, last = map(json.loads, as_json.stdout.splitlines())
    assert segment == {"topic_partition": "orders-0", "topic_id": rows[0]["topic_id"],
                       "segment_id": rows[0]["segment_id"], "start_offset": 0, "end_offset": 99,
                       "bytes": rows[0]["bytes"], "dry_run": True}  # fmt: skip
    assert last == summary and "would delete segment" not in as_json.stderr
    still = [json.loads(line) for line in offload("ls", url, "orders-0", "--json").stdout.splitlines()]
    assert still == rows
    result = offload("cleanup", url, "orders-0", *until, "--execute")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"dry_run": False, "segments": 1, "bytes": rows[0]["bytes"],
                                         "deleted_segments": 1, "log_start_offset": 100}  # fmt: skip
    left = [json.loads(line) for line in offload("ls", url, "orders-0", "--json").stdout.splitlines()]
    assert [r["base_offset"] for r in left] == [100]
    nothing = json.loads(offload("cleanup", url, "orders-0", "--until", "1", "--execute").stdout)
    assert nothing["deleted_segments"] == 0
    bad = offload("cleanup", url, "orders-0", "--until", "yesterday")
    assert bad.returncode == 2 and "neither milliseconds nor an ISO time" in bad.stderr
    escape = offload("read", url, "../etc-0", "--offset", "0")
    assert escape.returncode == 2 and "legal Kafka topic" in escape.stderr
    nothing = offload("read", url, "other-0", "--offset", "0")
    assert nothing.returncode == 1 and "no remote segments of other-0" in nothing.stderr
    not_a_partition = offload("copy", str(tmp_path), url)
    assert not_a_partition.returncode == 1 and "not a Kafka partition directory" in not_a_partition.stderr


# The offload command in a child process; prints the child's peak RSS (KiB on Linux).
PEAK_RSS = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")  # fmt: skip
RECORD = 2**20


@pytest.fixture(scope="module")
def zeros_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """One gzip batch of 200 records of 1 MiB of zeros (200 MiB decoded,
    200 KiB compressed), and a small partition to measure a baseline with."""
    root = tmp_path_factory.mktemp("zeros")
    url = f"file://{root / 'store'}"
    records = [kafka.Record(i, 1_700_000_000_000, None, bytes(RECORD)) for i in range(200)]
    batch = kafka.encode_batch(records, base_offset=0, compression=kafka.Compression.GZIP)
    del records
    for directory in (write_partition(root, "zeros-0", [SegmentSpec([batch])]),
                      write_partition(root, "small-0", numbered_segments(1))):  # fmt: skip
        assert offload("copy", str(directory), url, "--all").returncode == 0
    yield url, len(batch)


def peak_rss(*args: str) -> int:
    command = [sys.executable, "-m", "offload_core.cli", "kafka", *args]
    done = subprocess.run([sys.executable, "-c", PEAK_RSS, *command], capture_output=True, text=True, check=True)
    return int(done.stdout) * 1024


@pytest.mark.slow
def test_reading_a_huge_compressed_batch_streams_its_records(zeros_store: tuple[str, int]) -> None:
    url, compressed = zeros_store
    baseline = peak_rss("read", url, "small-0", "--offset", "0", "--json")
    peak = peak_rss("read", url, "zeros-0", "--offset", "0", "--json")
    # The batch's bytes twice (read, then joined), one record decoded with its
    # base64 and JSON, and room for decoder buffers: never the 200 MiB batch.
    assert peak - baseline < 2 * compressed + 8 * RECORD + 32 * 2**20, (peak, baseline)


def test_the_decompression_cap_is_an_option_named_in_its_error(zeros_store: tuple[str, int]) -> None:
    url, _ = zeros_store
    capped = offload("read", url, "zeros-0", "--offset", "0", "--json", "--max-decompressed-bytes", str(10 * RECORD))
    assert capped.returncode == 1
    assert "decompression cap of 10485760 bytes" in capped.stderr and "--max-decompressed-bytes" in capped.stderr
    assert len(capped.stdout.splitlines()) == 9  # records are printed as they are decoded, until the cap
    everything = offload("read", url, "zeros-0", "--offset", "199", "--json")
    assert everything.returncode == 0 and [json.loads(line)["offset"] for line in everything.stdout.splitlines()] == [
        199
    ]


def test_transforms_none_reads_the_bare_store(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(1))
    url = f"file://{tmp_path / 'store'}"
    assert offload("copy", str(directory), url, "--all").returncode == 0
    read = offload("read", url, "orders-0", "--offset", "0", "--json", "-o", "transforms=none")
    assert read.returncode == 0
    assert [json.loads(line)["offset"] for line in read.stdout.splitlines()] == list(range(100))


def test_copy_writes_through_the_transforms_the_docs_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from offload_core import open_driver
    from offload_core.transforming_driver import CHAIN_KEY

    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", f"file:{tmp_path / 'keyring.json'}")
    assert CliRunner().invoke(main, ["keys", "add"]).exit_code == 0
    directory = write_partition(tmp_path, "orders-0", numbered_segments(1))
    url = f"file://{tmp_path / 'store'}"
    copied = offload("copy", str(directory), url, "--all", "-o", "transforms=zstd,aes-gcm,crc32c")
    assert copied.returncode == 0, copied.stderr
    bare = open_driver(url)
    chains = {
        tuple(step["name"] for step in json.loads(bare.stat(info.key).metadata[CHAIN_KEY]))
        for info in bare.list("")
        if CHAIN_KEY in bare.stat(info.key).metadata
    }
    assert chains == {("zstd", "aes-gcm", "crc32c")}
    read = offload("read", url, "orders-0", "--offset", "0", "--json")
    assert [json.loads(line)["offset"] for line in read.stdout.splitlines()] == list(range(100))
