"""``managedLedgerOffloadDriver = "filesystem"`` as in Pulsar: the broker
offloads ledgers as Hadoop MapFiles under ``hadoop.tmp.dir`` on
``fileSystemURI`` (Pulsar's shipped profile: BLOCK, zlib), reads them back
under every read priority, and refuses a config written for the old
meaning of the name with a one-line error saying how to move over."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from offload_core import BlobStoreLedgerOffloader, PluginManager
from offload_core.errors import ConfigError
from offload_core.formats.sequence_file import Compression
from offload_core.managed_ledger import ReadPriority, parse_config
from offload_core.managed_ledger.lifecycle.filesystem_offload import filesystem_settings
from offload_core.managed_ledger.lifecycle.offloaders import OffloaderProvider
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from tests.managed_ledger.test_managed_ledger import TOPIC, payload, produce
from tests.managed_ledger.test_tiered_reads import PRIORITIES, expect_reads

# Pulsar's conf/filesystem_offload_core_site.xml, with hadoop.tmp.dir where the test wants it.
PULSAR_PROFILE = """<?xml version='1.0' encoding='UTF-8'?>
<configuration>
    <property><name>fs.defaultFS</name><value/></property>
    <property><name>hadoop.tmp.dir</name><value>{tmp_dir}</value></property>
    <property><name>io.file.buffer.size</name><value>4096</value></property>
    <property><name>io.seqfile.compress.blocksize</name><value>1000000</value></property>
    <property><name>io.seqfile.compression.type</name><value>BLOCK</value></property>
    <property><name>io.map.index.interval</name><value>128</value></property>
</configuration>
"""


def pulsar_profile(tmp_path: Path, tmp_dir: str) -> Path:
    path = tmp_path / "filesystem_offload_core_site.xml"
    path.write_text(PULSAR_PROFILE.format(tmp_dir=tmp_dir))
    return path


@pytest.mark.parametrize("workers", [0, 1], ids=["in-broker", "worker-process"])
def test_a_topic_offloads_as_mapfiles_and_reads_back_under_every_priority(
    make_broker: Any, tmp_path: Path, workers: int
) -> None:
    base = tmp_path / "hadoop"
    broker = make_broker(
        managedLedgerOffloadDriver="filesystem",
        fileSystemURI="file:///",
        fileSystemProfilePath=str(pulsar_profile(tmp_path, str(base))),
        managedLedgerOffloadDeletionLagMs=3_600_000,
        managedLedgerOffloadWorkerProcesses=workers,
    )
    produce(broker, 300)
    ledger = broker.topic(TOPIC)
    ledger.append(payload(300))  # the current ledger: always hot
    ledger.offload_prefix(ledger.last_position)
    sealed = ledger.ledgers()[:3]
    assert [s.tier for s in sealed] == ["hot+offloaded"] * 3
    for state in sealed:
        directory = base / ledger.name / f"{state.ledger_id}-{state.uuid}"
        assert sorted(p.name for p in directory.iterdir()) == [".data.crc", ".index.crc", "data", "index"]
        assert (directory / "data").read_bytes()[:4] == b"SEQ\x06"

    after: dict[ReadPriority, str | None] = {
        ReadPriority.OFFLOADED_FIRST: "mixed",
        ReadPriority.OFFLOADED_ONLY: None,  # the current ledger is not offloaded
        ReadPriority.BOOKKEEPER_FIRST: "hot",
        ReadPriority.BOOKKEEPER_ONLY: "hot",
    }
    expect_reads(broker, after, 301)
    broker._clock.advance(3601)
    assert len(ledger.delete_hot_copies_past_lag()) == 3
    gone = {p: "mixed" for p in PRIORITIES} | {ReadPriority.OFFLOADED_ONLY: None, ReadPriority.BOOKKEEPER_ONLY: None}
    expect_reads(broker, gone, 301)


@pytest.mark.parametrize(
    "config",
    [
        {"managedLedgerOffloadDriver": "filesystem", "managedLedgerOffloadBucket": "/data/offload-bucket"},
        {"managedLedgerOffloadDriver": "filesystem"},
    ],
    ids=["with-bucket", "bare"],
)
def test_a_config_written_for_the_old_meaning_is_refused_in_one_line(config: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(config)
    message = str(caught.value)
    assert "\n" not in message
    assert 'managedLedgerOffloadDriver = "local-directory"' in message
    assert "fileSystemURI" in message


def test_the_local_blob_store_directory_has_a_name_of_its_own(tmp_path: Path) -> None:
    config = parse_config({"managedLedgerOffloadDriver": "local-directory", "managedLedgerOffloadBucket": "/x"})
    assert config.policies.driver == "local-directory"
    assert parse_config({}).policies.driver == "local-directory"


def test_streaming_needs_a_blob_store(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="offloads whole ledgers only"):
        parse_config({"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "file:///",
                      "managedLedgerOffloadStreamingEnabled": True})  # fmt: skip


def test_the_profile_shapes_the_files_and_relative_tmp_dirs_resolve_as_hadoop_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = filesystem_settings("file:///", str(pulsar_profile(tmp_path, "pulsar")))
    assert settings["storageBasePath"] == f"file://{tmp_path}/pulsar"
    assert settings["io.seqfile.compression.type"] == "BLOCK"
    assert settings["io.map.index.interval"] == "128"
    hdfs = filesystem_settings("hdfs://namenode:9870", str(pulsar_profile(tmp_path, "pulsar")))
    assert hdfs["storageBasePath"].startswith("hdfs://namenode:9870/user/")
    # Without a profile: Hadoop's defaults, RECORD compression.
    assert filesystem_settings(f"file://{tmp_path}", None)["io.seqfile.compression.type"] == "RECORD"
    with pytest.raises(ConfigError, match="does not exist"):
        filesystem_settings("file:///", str(tmp_path / "missing.xml"))


def test_the_default_store_still_gets_pip17_objects(make_broker: Any, tmp_path: Path) -> None:
    broker = make_broker(managedLedgerOffloadDriver="local-directory")
    produce(broker, 150)
    ledger = broker.topic(TOPIC)
    ledger.offload_prefix()
    keys = [p.name for p in (tmp_path / "data" / "bucket").iterdir() if not p.name.startswith(".")]
    assert keys and all("-ledger-" in key for key in keys), keys


def test_ledgers_recorded_under_the_old_meaning_open_the_blob_store_directory(tmp_path: Path) -> None:
    provider = OffloaderProvider(PluginManager(), tmp_path)
    recorded_before = {"driver": "filesystem", "bucket": str(tmp_path / "bucket"), "offloader": "blobstore"}
    old = provider.for_settings(recorded_before, max_block_size=4096, read_buffer_size=1024)
    assert isinstance(old, BlobStoreLedgerOffloader)
    settings = filesystem_settings(f"file://{tmp_path}", str(pulsar_profile(tmp_path, "/hadoop")))
    new = provider.for_settings(settings, max_block_size=4096, read_buffer_size=1024)
    assert isinstance(new, MapFileLedgerOffloader)
    assert (new.compression, new.block_size, new.index_interval) == (Compression.BLOCK, 1_000_000, 128)
    provider.close()
