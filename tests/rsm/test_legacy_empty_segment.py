"""Stores and metadata written by versions that tiered an empty active
segment (``end_offset = start_offset - 1``, no leader epochs) stay readable:
the empty segment holds no offset, listings show it as empty, reads skip
it, and deleting the partition removes its objects."""

from __future__ import annotations

import json
from pathlib import Path

from offload_core.managed_ledger.metadata_store import SqliteMetadataStore
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteLogMetadataManager, RemoteLogSegmentId, RemoteStorageManager, TopicIdPartition
from offload_core.rsm.types import TopicPartition
from tests.rsm.segments import TOPIC_ID, numbered_segments, write_partition
from tests.test_cli_kafka import offload

TP = TopicIdPartition(TOPIC_ID, TopicPartition("orders", 0))
LEGACY_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
BASE = 100  # numbered_segments(1) holds offsets 0-99


def legacy_manifest(base: int) -> bytes:
    """The manifest `copy --all` wrote for an empty active segment before
    Kafka's copy contract: the old encode_manifest's fields and order."""
    body = {"format": "offload-core-rsm-manifest/1", "topic_id": TOPIC_ID, "topic": "orders", "partition": 0,
            "segment_id": LEGACY_ID, "start_offset": base, "end_offset": base - 1, "max_timestamp_ms": -1,
            "broker_id": -1, "event_timestamp_ms": 1_700_000_000_000, "segment_size_in_bytes": 0,
            "segment_leader_epochs": [], "objects": {"index": 0, "log": 0, "timeindex": 0},
            "index_entries": []}  # fmt: skip
    return json.dumps(body, separators=(",", ":")).encode()


def write_legacy_segment(store: Path, base: int) -> list[Path]:
    directory = store / f"orders-0-{TOPIC_ID}"
    paths = [directory / f"{base:020d}-{LEGACY_ID}.{suffix}" for suffix in ("log", "index", "timeindex")]
    for path in paths:
        path.write_bytes(b"")
    manifest = directory / f"{base:020d}-{LEGACY_ID}.rsm-manifest"
    manifest.write_bytes(legacy_manifest(base))
    return [*paths, manifest]


def test_a_legacy_empty_segment_is_listed_skipped_by_reads_and_deleted(tmp_path: Path) -> None:
    directory = write_partition(tmp_path, "orders-0", numbered_segments(1))
    store = tmp_path / "store"
    url = f"file://{store}"
    assert offload("copy", str(directory), url, "--all").returncode == 0
    legacy = write_legacy_segment(store, BASE)

    listed = offload("ls", url, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert [(r["base_offset"], r["end_offset"], r["state"].split(" ")[0]) for r in rows] == [
        (0, 99, "COPY_SEGMENT_FINISHED"),
        (BASE, None, "empty"),
    ]
    read = offload("read", url, "orders-0", "--offset", "0", "--json")
    assert read.returncode == 0, read.stderr
    assert [json.loads(line)["offset"] for line in read.stdout.splitlines()] == list(range(BASE))
    again = offload("copy", str(directory), url, "--all")
    assert again.returncode == 0 and "1 already there" in again.stdout, again.stderr

    with open_driver(url) as driver:
        RemoteStorageManager(driver).delete_topic_partition(TP)
    assert not any(path.exists() for path in legacy)
    assert not list((store / f"orders-0-{TOPIC_ID}").iterdir())


def test_a_legacy_empty_segment_record_is_skipped_by_the_metadata_manager(tmp_path: Path) -> None:
    path = tmp_path / "rlmm.sqlite"
    store = SqliteMetadataStore(path)
    try:
        record = {"finished_seq": 0, "start_offset": BASE, "end_offset": BASE - 1, "max_timestamp_ms": -1,
                  "broker_id": -1, "event_timestamp_ms": 0, "segment_size_in_bytes": 0, "segment_leader_epochs": [],
                  "state": "COPY_SEGMENT_FINISHED", "custom_metadata": None}  # fmt: skip
        store.create(f"/kafka-remote-log/orders-0-{TOPIC_ID}/segments/{LEGACY_ID}", json.dumps(record).encode())
    finally:
        store.close()
    with RemoteLogMetadataManager(path) as manager:
        assert manager.list_remote_log_segments(TP) == []
        assert manager.served_ranges(TP) == []
        assert manager.segment(RemoteLogSegmentId(TP, LEGACY_ID)) is None
