"""Bad objects in an Aiven-layout store: each a one-line error naming the
object (and the key pair, for keys), never a traceback and never wrong
bytes; and every truncation and bit flip of each shared run's objects gives
only our errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from Cryptodome.PublicKey import RSA
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import OffloadError
from offload_core.plugins import open_driver
from offload_core.rsm.aiven.storage import AivenRemoteStorage
from offload_core.rsm.index_check import checked_index
from offload_core.rsm.log_reader import RemoteLogReader
from offload_core.rsm.types import IndexType, TopicPartition
from offload_core.storage import StorageDriver
from tests.aiven_vectors import FILESYSTEM_BACKEND, AivenRun, aiven_runs, private_keys, server_properties
from tests.rsm.aiven.stores import put_run
from tests.test_cli_kafka import offload

RUNS = aiven_runs()
ENCRYPTED = RUNS[2]
TP = "oracle-a-0"
INDEXES = {IndexType.OFFSET: "offset_index", IndexType.TIMESTAMP: "time_index",
           IndexType.PRODUCER_SNAPSHOT: "producer_snapshot", IndexType.LEADER_EPOCH: "leader_epoch_index"}  # fmt: skip


def _store(tmp_path: Path, run: AivenRun, suffix: str, change: object) -> tuple[str, str]:
    url = f"file://{tmp_path / 'store'}"
    with open_driver(url) as driver:
        key = put_run(driver, run).with_suffix(suffix).key  # type: ignore[arg-type]
        data = driver.read(key)
        driver.write(key, [change(data)], metadata={})  # type: ignore[operator]
    return url, key


def _one_line_error(*args: str) -> str:
    failed = offload(*args)
    assert failed.returncode == 1 and failed.stdout == ""
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in failed.stderr, failed.stderr
    return lines[0]


def _flip(at: int) -> object:
    return lambda data: data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


def test_a_tampered_chunk_names_the_object_and_chunk(tmp_path: Path) -> None:
    url, key = _store(tmp_path, ENCRYPTED, "log", _flip(3000))
    storage = {"backend.class": FILESYSTEM_BACKEND, "root": str(tmp_path / "store")}
    config = str(server_properties(tmp_path / "server.properties", ENCRYPTED, storage))
    line = _one_line_error("read", "--layout", "aiven", "--config", config, TP, "--offset", "0")
    assert re.search(rf"chunk \d+ of '{re.escape(key)}' fails its AES-GCM check", line), line


def test_a_wrong_or_missing_private_key_names_the_key_pair(tmp_path: Path) -> None:
    url, manifest = _store(tmp_path, ENCRYPTED, "rsm-manifest", lambda data: data)
    other = RSA.generate(2048).export_key()
    (tmp_path / "other.pem").write_bytes(other)
    (tmp_path / "server.properties").write_text(
        "rsm.config.storage.backend.class=io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage\n"
        f"rsm.config.storage.root={tmp_path / 'store'}\nrsm.config.encryption.enabled=true\n"
        "rsm.config.encryption.key.pair.id=oracle-key-1\nrsm.config.encryption.key.pairs=oracle-key-1\n"
        "rsm.config.encryption.key.pairs.oracle-key-1.public.key.file=unused.pem\n"
        f"rsm.config.encryption.key.pairs.oracle-key-1.private.key.file={tmp_path / 'other.pem'}\n"
    )
    config = str(tmp_path / "server.properties")
    line = _one_line_error("read", "--layout", "aiven", "--config", config, TP, "--offset", "0")
    assert "oracle-key-1" in line and manifest in line and "does not unwrap" in line
    line = _one_line_error("fetch-index", "--layout", "aiven", url, TP, "0", "--type", "offset")
    assert "oracle-key-1" in line and manifest in line


def test_an_unknown_manifest_field_or_version_names_the_manifest(tmp_path: Path) -> None:
    def added(data: bytes) -> bytes:
        return json.dumps({**json.loads(data), "segmentFormat": "iceberg"}).encode()

    url, manifest = _store(tmp_path, RUNS[0], "rsm-manifest", added)
    line = _one_line_error("ls", "--layout", "aiven", url)
    assert manifest in line and "segmentFormat" in line
    url, manifest = _store(
        tmp_path / "v2", RUNS[0], "rsm-manifest", lambda d: d.replace(b'"version":"1"', b'"version":"2"')
    )
    assert manifest in _one_line_error("read", "--layout", "aiven", url, TP, "--offset", "0")


@pytest.mark.parametrize("suffix", ["log", "indexes"])
def test_an_object_not_the_size_its_manifest_adds_up_to_is_named(tmp_path: Path, suffix: str) -> None:
    url, key = _store(tmp_path, RUNS[1], suffix, lambda data: data[:-1])
    line = _one_line_error("read", "--layout", "aiven", url, TP, "--offset", "0")
    assert key in line and ("adds up to" in line or "up to byte" in line), line


def _read_everything(driver: StorageDriver) -> tuple[list[tuple[int, bytes | None]], dict[IndexType, bytes], bytes]:
    store = AivenRemoteStorage(driver, private_keys=private_keys(), buffer_size=2048)
    reader = RemoteLogReader(store, store.resolve(TopicPartition("oracle-a", 0), None, option="--topic-id"))
    records = [(r.record.offset, r.record.value) for r in reader.records(0)]
    indexes = {kind: checked_index(store, reader.segments[0], kind) for kind in INDEXES}
    with store.fetch_log_segment(reader.segments[0], 0) as stream:
        log = stream.read()
    return records, indexes, log


@given(data=st.data())
def test_every_truncation_and_bit_flip_gives_only_our_errors(data: st.DataObject) -> None:
    run = data.draw(st.sampled_from(RUNS), label="run")
    suffix = data.draw(st.sampled_from(["log", "indexes", "rsm-manifest"]), label="object")
    original = run.object_bytes(suffix)
    if data.draw(st.booleans(), label="truncate"):
        changed = original[: data.draw(st.integers(0, len(original) - 1), label="length")]
    else:
        bit = data.draw(st.integers(0, 8 * len(original) - 1), label="bit")
        changed = bytearray(original)
        changed[bit // 8] ^= 1 << (bit % 8)
    with open_driver("memory://") as driver:
        for key, stored in run.objects().items():
            driver.write(key, [bytes(changed) if key == run.object_key(suffix) else stored], metadata={})
        try:
            records, indexes, log = _read_everything(driver)
        except OffloadError:
            return
    if run is ENCRYPTED and suffix != "rsm-manifest":  # authenticated: what is read is what Kafka wrote
        assert log == run.input_bytes("log")
        assert indexes == {kind: run.input_bytes(name) for kind, name in INDEXES.items()}


def test_the_untouched_runs_read_as_kafka_wrote_them() -> None:
    for run in RUNS:
        with open_driver("memory://") as driver:
            for key, stored in run.objects().items():
                driver.write(key, [stored], metadata={})
            records, indexes, log = _read_everything(driver)
        assert log == run.input_bytes("log") and len(records) == 52
        assert indexes == {kind: run.input_bytes(name) for kind, name in INDEXES.items()}
