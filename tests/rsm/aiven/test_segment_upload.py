"""Uploading a Kafka segment as Aiven's plugin does, through a real store:
the plugin's objects and custom metadata for the same inputs, read back
by our reader, and nothing left behind by a copy that fails."""

from __future__ import annotations

import base64
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from offload_core.errors import FormatError, TransientStorageError
from offload_core.formats import kafka
from offload_core.rsm.aiven.keys import require_key
from offload_core.rsm.aiven.manifest import IndexKind, decode_manifest
from offload_core.rsm.aiven.segment_reader import AivenSegmentReader
from offload_core.rsm.aiven.segment_upload import copied_segments, upload_aiven_segment
from offload_core.rsm.aiven.segment_writer import AivenWriteSettings
from offload_core.rsm.aiven.storage import AivenRemoteStorage
from offload_core.rsm.types import IndexType, LogSegmentData
from offload_core.storage import StorageDriver
from tests.aiven_vectors import AivenRun, aiven_runs, private_keys
from tests.kafka_vectors import VECTORS
from tests.rsm.aiven.test_segment_writer import INPUTS, metadata_of, plugins_randomness, settings_of

RUNS = aiven_runs()


def segment_files(case: str = "a-uncompressed", where: Path = VECTORS) -> LogSegmentData:
    folder = where / case
    (snapshot,) = folder.glob("*.snapshot")
    return LogSegmentData(log_segment=folder / "00000000000000000000.log",
                          offset_index=folder / "00000000000000000000.index",
                          time_index=folder / "00000000000000000000.timeindex", transaction_index=None,
                          producer_snapshot_index=snapshot,
                          leader_epoch_index=(folder / "leader-epoch-index.rlm").read_bytes())  # fmt: skip


def stored(store: StorageDriver) -> dict[str, bytes]:
    return {info.key: store.read(info.key) for info in store.list("")}


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_the_plugins_objects_and_custom_metadata_for_the_same_inputs(store: StorageDriver, run: AivenRun) -> None:
    custom = upload_aiven_segment(store, settings_of(run), metadata_of(run), segment_files(), buffer_size=5000,
                                  random_bytes=plugins_randomness(run))  # fmt: skip
    objects = stored(store)
    assert sorted(objects) == sorted(run.objects())
    for suffix in ("log", "indexes") if run.spec.get("encryption_secrets") else ("log", "indexes", "rsm-manifest"):
        assert objects[run.object_key(suffix)] == run.object_bytes(suffix), suffix
    assert custom == base64.b64decode(run.spec["returned_custom_metadata_base64"])
    assert copied_segments(store, "", metadata_of(run).topic_id_partition) == {(0, 46131)}


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_fresh_randomness_reads_back_to_what_kafka_wrote(store: StorageDriver, run: AivenRun) -> None:
    upload_aiven_segment(store, settings_of(run), metadata_of(run), segment_files())
    segment = require_key(run.object_key("rsm-manifest"))
    reader = AivenSegmentReader(store.read, segment, store.read(segment.key), private_keys())
    assert reader.read_log() == run.input_bytes("log")
    for kind, name in INPUTS.items():
        assert reader.read_index(kind) == run.input_bytes(name)
    assert reader.read_index(IndexKind.TRANSACTION) is None


def failing_on(store: StorageDriver, suffix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    write = store.write

    def flaky(key: str, parts: Any, **options: Any) -> Any:
        if key.endswith(suffix):
            raise TransientStorageError(f"injected: the store is down writing {key}")
        return write(key, parts, **options)

    monkeypatch.setattr(store, "write", flaky)


@pytest.mark.parametrize("suffix", [".log", ".indexes", ".rsm-manifest"])
def test_a_failed_upload_leaves_no_object(store: StorageDriver, suffix: str, monkeypatch: pytest.MonkeyPatch) -> None:
    failing_on(store, suffix, monkeypatch)
    with pytest.raises(TransientStorageError, match="injected"):
        upload_aiven_segment(store, settings_of(RUNS[2]), metadata_of(RUNS[2]), segment_files())
    assert stored(store) == {}


def test_a_failed_cleanup_of_the_manifest_still_deletes_the_log_and_indexes(
    store: StorageDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    failing_on(store, ".rsm-manifest", monkeypatch)
    delete, tried = store.delete, []

    def manifest_undeletable(keys: Any) -> None:
        batch = [keys] if isinstance(keys, str) else list(keys)
        tried.extend(batch)
        if any(key.endswith(".rsm-manifest") for key in batch):
            raise TransientStorageError("injected: the store is down deleting the manifest")
        delete(batch)

    monkeypatch.setattr(store, "delete", manifest_undeletable)
    with pytest.raises(TransientStorageError, match="injected: the store is down writing"):
        upload_aiven_segment(store, settings_of(RUNS[2]), metadata_of(RUNS[2]), segment_files())
    assert tried[0].endswith(".rsm-manifest")
    assert stored(store) == {}


def damaged_copy(tmp_path: Path, edit: Callable[[bytearray], None]) -> LogSegmentData:
    shutil.copytree(VECTORS / "a-uncompressed", tmp_path / "a-uncompressed")
    log = tmp_path / "a-uncompressed" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    edit(data)
    log.write_bytes(data)
    return segment_files(where=tmp_path)


def test_a_damaged_batch_fails_the_copy_and_leaves_no_object(store: StorageDriver, tmp_path: Path) -> None:
    def flip(data: bytearray) -> None:
        data[30000] ^= 1

    with pytest.raises(FormatError, match="CRC"):
        upload_aiven_segment(store, settings_of(RUNS[1]), metadata_of(RUNS[1]), damaged_copy(tmp_path, flip))
    assert stored(store) == {}


def test_a_log_of_another_size_than_its_metadata_is_refused(store: StorageDriver) -> None:
    metadata = metadata_of(RUNS[0])
    wrong = replace(metadata, segment_size_in_bytes=46130)
    with pytest.raises(FormatError, match="46131 bytes but its metadata says 46130"):
        upload_aiven_segment(store, settings_of(RUNS[0]), wrong, segment_files())
    assert stored(store) == {}


@pytest.mark.parametrize(("case", "compressed"), [("a-uncompressed", True), ("b-gzip", False)])
def test_compression_heuristic_leaves_compressed_segments_as_they_are(
    store: StorageDriver, case: str, compressed: bool
) -> None:
    settings = AivenWriteSettings(4096, compression=True, compression_heuristic=True)
    metadata = metadata_of(RUNS[0])
    files = segment_files(case)
    size = files.log_segment.stat().st_size
    upload_aiven_segment(store, settings, replace(metadata, segment_size_in_bytes=size),
                         files)  # fmt: skip
    key = RUNS[0].object_key("rsm-manifest")
    assert decode_manifest(store.read(key), key).compression is compressed


def test_a_transaction_index_whose_indexes_object_vanished_is_refused(store: StorageDriver, tmp_path: Path) -> None:
    """NotFoundError from fetch_index(TRANSACTION) means "no aborted
    transactions" to a read_committed reader: a listed segment whose
    manifest records a transaction index but whose ``.indexes`` is gone
    since (deleted after the listing) is refused, naming it, rather than
    read as if it had none."""
    run = RUNS[0]
    txn = tmp_path / "00000000000000000000.txnindex"
    txn.write_bytes(kafka.encode_txn_index([kafka.AbortedTxn(77, 3, 5, 6)]))
    upload_aiven_segment(store, settings_of(run), metadata_of(run), replace(segment_files(), transaction_index=txn))
    tp = metadata_of(run).topic_id_partition
    fresh, listed = AivenRemoteStorage(store, prefix=run.prefix), AivenRemoteStorage(store, prefix=run.prefix)
    (segment,) = listed.list_remote_segments(tp)
    assert fresh.fetch_index(segment, IndexType.TRANSACTION).read() == txn.read_bytes()
    indexes = require_key(run.object_key("rsm-manifest")).with_suffix("indexes").key
    store.delete(indexes)
    with pytest.raises(FormatError, match=f"{indexes} is gone but its segment's manifest records a transaction"):
        listed.fetch_index(segment, IndexType.TRANSACTION)
