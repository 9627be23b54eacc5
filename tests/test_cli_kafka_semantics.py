"""`offload kafka ...` with Kafka's semantics where brokers leave them:
topic ids (a topic deleted and recreated is another topic), and
overlapping copies after a leader change (each offset read once), and
Kafka's copy contracts (end offsets, one copier a partition)."""

from __future__ import annotations

import json
from pathlib import Path

from offload_core.formats import kafka
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteLogMetadataManager, RemoteLogSegmentState, RemoteStorageManager, read_partition_dir
from offload_core.testing.faults import FaultyDriver
from tests.kafka_vectors import kafka_cases
from tests.rsm.segments import (
    TOPIC_ID,
    SegmentSpec,
    fixture_partition,
    numbered_segments,
    overlapping_copies,
    plain_batch,
    undecided_transaction_segments,
    write_partition,
)
from tests.test_cli_kafka import Ran, offload

REBORN = "tvHCaSDsQZWsjr5rbtCjxA"


def lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_copy_takes_the_topic_id_from_partition_metadata_or_the_option(tmp_path: Path) -> None:
    case = kafka_cases()[0]
    url = f"file://{tmp_path / 'store'}"
    bare = fixture_partition(case, tmp_path / "bare", topic_id=None)
    refused = offload("copy", str(bare), url, "--all")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "partition.metadata" in refused.stderr and "--topic-id" in refused.stderr
    copied = offload("copy", str(bare), url, "--all", "--topic-id", REBORN)
    assert copied.returncode == 0 and f"(topic id {REBORN}): copied 1 segment(s)" in copied.stdout, copied.stderr
    listed = lines(offload("ls", url, "--json").stdout)
    assert [(r["topic_partition"], r["topic_id"]) for r in listed] == [(bare.name, REBORN)]
    assert (tmp_path / "store" / f"{bare.name}-{REBORN}").is_dir()


def test_a_recreated_topic_needs_its_topic_id_and_never_mixes(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'store'}"
    old = write_partition(tmp_path / "old", "orders-0", [SegmentSpec([plain_batch(0, 5, timestamp=1_000)])])
    new = write_partition(tmp_path / "new", "orders-0", [SegmentSpec([plain_batch(0, 3, timestamp=9_000)])],
                          topic_id=REBORN)  # fmt: skip
    for directory in (old, new):
        assert offload("copy", str(directory), url, "--all").returncode == 0
    listed = lines(offload("ls", url, "orders-0", "--json").stdout)
    assert sorted((r["topic_id"], r["end_offset"]) for r in listed) == sorted([(TOPIC_ID, 4), (REBORN, 2)])
    for verb in (["read", url, "orders-0", "--offset", "0"], ["offsets", url, "orders-0", "--timestamp", "0"],
                 ["fetch-index", url, "orders-0", "0", "--type", "offset"],
                 ["cleanup", url, "orders-0", "--until", "1"]):  # fmt: skip
        ambiguous = offload(*verb)
        assert ambiguous.returncode == 1 and ambiguous.stderr.count("\n") == 1, (verb, ambiguous.stderr)
        assert "orders-0 has 2 topic ids in the store" in ambiguous.stderr and "--topic-id" in ambiguous.stderr
        assert TOPIC_ID in ambiguous.stderr and REBORN in ambiguous.stderr
    for topic_id, expected in (
        (TOPIC_ID, [(o, 1_000 + o) for o in range(5)]),
        (REBORN, [(o, 9_000 + o) for o in range(3)]),
    ):
        read = offload("read", url, "orders-0", "--offset", "0", "--json", "--topic-id", topic_id)
        assert [(r["offset"], r["timestamp"]) for r in lines(read.stdout)] == expected
    answer = offload("offsets", url, "orders-0", "--timestamp", "9001", "--topic-id", REBORN)
    assert json.loads(answer.stdout) == {"offset": 1, "timestamp": 9001}
    cleaned = offload("cleanup", url, "orders-0", "--until", "2000", "--topic-id", TOPIC_ID, "--execute")
    assert json.loads(cleaned.stdout)["deleted_segments"] == 1
    # One incarnation left: no id needed.
    assert len(lines(offload("read", url, "orders-0", "--offset", "0", "--json").stdout)) == 3


def test_segments_copied_before_topic_ids_list_as_unknown(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'store'}"
    directory = write_partition(tmp_path, "orders-0", [SegmentSpec([plain_batch(0, 5, timestamp=1_000)])])
    assert offload("copy", str(directory), url, "--all").returncode == 0
    stored = tmp_path / "store" / f"orders-0-{TOPIC_ID}"
    legacy = stored.rename(tmp_path / "store" / "orders-0")
    for manifest in legacy.glob("*.rsm-manifest"):
        body = json.loads(manifest.read_bytes())
        del body["topic_id"]
        manifest.write_text(json.dumps(body))
    (row,) = lines(offload("ls", url, "--json").stdout)
    assert row["topic_id"] is None and row["end_offset"] == 4
    assert "  unknown  " in offload("ls", url).stdout
    assert [r["offset"] for r in lines(offload("read", url, "orders-0", "--offset", "0", "--json").stdout)] == [
        0, 1, 2, 3, 4
    ]  # fmt: skip
    # Copied again under its id, the name has two: the old copy is named 'unknown'.
    assert offload("copy", str(directory), url, "--all").returncode == 0
    ambiguous = offload("read", url, "orders-0", "--offset", "0")
    assert "(5fEBmixCR5-dMntYSLIr1g, unknown)" in ambiguous.stderr or "(unknown, 5fEBmixCR5-dMntYSLIr1g)" in (
        ambiguous.stderr
    )
    chosen = offload("read", url, "orders-0", "--offset", "3", "--json", "--topic-id", "unknown")
    assert [r["offset"] for r in lines(chosen.stdout)] == [3, 4]


def test_overlapping_copies_of_a_leader_change_read_each_offset_once(tmp_path: Path) -> None:
    case = kafka_cases()[0]
    old, new, cut = overlapping_copies(case, tmp_path)  # 0..51 in epoch 0, then 20..51 in epoch 1
    url = f"file://{tmp_path / 'store'}"
    for directory in (old, new):
        assert offload("copy", str(directory), url, "--all").returncode == 0
    listed = lines(offload("ls", url, "--json").stdout)
    assert [(r["base_offset"], r["end_offset"], r["state"]) for r in listed] == [
        (0, 51, "COPY_SEGMENT_FINISHED"),
        (cut, 51, "COPY_SEGMENT_FINISHED"),
    ]
    read = lines(offload("read", url, old.name, "--offset", "0", "--json").stdout)
    expected = [r for batch in case.spec["batches"] for r in batch["records"]]
    assert [(r["offset"], r["timestamp"], r["key_b64"], r["value_b64"]) for r in read] == [
        (r["offset"], r["timestamp"], r["key"], r["value"]) for r in expected
    ]
    assert [r["offset"] for r in lines(offload("read", url, old.name, "--offset", "25", "--json").stdout)] == list(
        range(25, 52)
    )


def test_an_older_copy_replaced_by_a_newer_one_is_listed_unreferenced(tmp_path: Path) -> None:
    case = kafka_cases()[0]
    url = f"file://{tmp_path / 'store'}"
    batches = list(kafka.iter_batches(case.log))
    lagging = [case.log[b.position : b.position + b.size_in_bytes] for b in batches[1:6]]  # offsets 1..19
    name = f"{case.spec['topic']}-{case.spec['partition']}"
    for directory in (write_partition(tmp_path / "old", name, [SegmentSpec(lagging)]),
                      fixture_partition(case, tmp_path / "new")):  # fmt: skip
        assert offload("copy", str(directory), url, "--all").returncode == 0
    listed = lines(offload("ls", url, "--json").stdout)
    assert [(r["base_offset"], r["state"]) for r in listed] == [
        (0, "COPY_SEGMENT_FINISHED"),
        (1, "COPY_SEGMENT_FINISHED, unreferenced (newer overlapping copies serve its offsets)"),
    ]
    read = lines(offload("read", url, name, "--offset", "0", "--json").stdout)
    assert [r["offset"] for r in read] == list(range(52))


def test_a_copy_ends_where_the_next_segment_begins(tmp_path: Path) -> None:
    # Segment 0 holds offsets 0..94 (compaction removed 95..99); the next begins at 100.
    first = SegmentSpec([plain_batch(base, 5, timestamp=1_000 + base, size=20) for base in range(0, 95, 5)])
    second = SegmentSpec([plain_batch(100, 5, timestamp=2_000, size=20)])
    directory = write_partition(tmp_path, "orders-0", [first, second])
    (directory / f"{95:020d}.snapshot").rename(directory / f"{100:020d}.snapshot")
    url = f"file://{tmp_path / 'store'}"
    assert offload("copy", str(directory), url).returncode == 0
    (row,) = lines(offload("ls", url, "--json").stdout)
    assert (row["base_offset"], row["end_offset"]) == (0, 99)  # Kafka's copy: next segment's base - 1
    assert json.loads(offload("offsets", url, "orders-0", "--timestamp", "-1").stdout)["offset"] == 100
    assert offload("copy", str(directory), url, "--all").returncode == 0
    assert [r["end_offset"] for r in lines(offload("ls", url, "--json").stdout)] == [99, 104]


def test_a_second_copy_of_a_partition_stops_without_damage(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(3))
    url = f"file://{tmp_path / 'store'}"
    rlmm_path = tmp_path / "rlmm.sqlite"
    tp, segments = read_partition_dir(directory)
    second_run: list[Ran] = []

    class SecondRunMidway(FaultyDriver):
        """The first copy's store: a second `kafka copy` runs while its first object uploads."""

        def _write(self, key, parts, metadata, if_absent):  # type: ignore[no-untyped-def]
            if not second_run:
                second_run.append(offload("copy", str(directory), url, "--metadata", str(rlmm_path)))
            return super()._write(key, parts, metadata, if_absent)

    rlmm = RemoteLogMetadataManager(rlmm_path)
    first_run = RemoteStorageManager(SecondRunMidway(open_driver(url), []), metadata_manager=rlmm)
    for segment in segments[:2]:
        first_run.copy_log_segment(tp, segment.data)
    (loser,) = second_run
    assert loser.returncode == 1 and loser.stderr.count("\n") == 1, loser.stderr
    assert "another copy holds" in loser.stderr and "orders-0" in loser.stderr
    # Nothing damaged: the first run's copies are whole, recorded once, and read back.
    listed = lines(offload("ls", url, "--json").stdout)
    assert [(r["base_offset"], r["end_offset"], r["state"]) for r in listed] == [
        (0, 99, "COPY_SEGMENT_FINISHED"),
        (100, 199, "COPY_SEGMENT_FINISHED"),
    ]
    assert {s.state for s in rlmm.list_remote_log_segments(tp)} == {RemoteLogSegmentState.COPY_SEGMENT_FINISHED}
    assert len(lines(offload("read", url, "orders-0", "--offset", "0", "--json").stdout)) == 200
    rlmm.close()
    # Once the first run is done, the second goes ahead.
    again = offload("copy", str(directory), url, "--metadata", str(rlmm_path))
    assert again.returncode == 0 and "0 segment(s), 2 already there" in again.stdout, again.stderr


def test_copy_tiers_nothing_from_the_last_stable_offset_it_can_prove(tmp_path: Path) -> None:
    """Producer 77's transaction from offset 2 is open in the directory's
    newest producer snapshot: no segment holding offsets from 2 on is tiered
    (before, both were, and a read_committed reader had nothing to stop it),
    until the ABORT marker is in the directory."""
    undecided, aborted = undecided_transaction_segments()
    open_entry = undecided.snapshot[0]
    still_open = SegmentSpec([plain_batch(7, 2, timestamp=1_700_000_000_007, size=20)], snapshot=[open_entry])
    url = f"file://{tmp_path / 'store'}"
    waiting = write_partition(tmp_path / "waiting", "orders-0", [undecided, still_open])
    held = offload("copy", str(waiting), url, "--all")
    assert held.returncode == 0 and "copied 0 segment(s)" in held.stdout, held.stderr
    assert "producer 77's transaction from offset 2 is not decided" in held.stderr
    assert "last stable offset" in held.stderr and "stopping before segment 0" in held.stderr
    assert lines(offload("ls", url, "--json").stdout) == []
    decided = write_partition(tmp_path / "decided", "orders-0", [undecided, aborted])
    copied = offload("copy", str(decided), url, "--all")
    assert copied.returncode == 0 and "copied 2 segment(s)" in copied.stdout and "stable" not in copied.stderr
