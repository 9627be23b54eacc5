"""The plugin's GCS and Azure backends end to end: `offload kafka copy
--layout aiven` writes into gcp-storage-emulator and Azurite, configured
by a broker's properties file for that backend (no URL), and every read
verb reads it back from the same file as from the filesystem backend."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.emulators import Azurite, GcsEmulator
from tests.rsm.segments import fixture_partition
from tests.test_cli_kafka import offload
from tests.test_cli_kafka_aiven_copy import CASE, RUNS, TOPIC_ID, broker_properties

pytestmark = pytest.mark.emulator

PACKAGE = "io.aiven.kafka.tieredstorage.storage."
TP = "oracle-a-0"
ENCRYPTED = RUNS[2]  # chunked, zstd and AES-GCM: every transform on the way through the cloud store


def _round_trip(tmp_path: Path, backend: dict[str, str]) -> dict[str, str]:
    """Copy the Kafka segment with the encrypted run's settings to ``backend``, and what the read verbs print."""
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    config = str(broker_properties(ENCRYPTED, tmp_path / "server.properties", **backend))
    copied = offload("copy", str(directory), "--all", "--layout", "aiven", "--config", config)
    assert copied.returncode == 0, copied.stderr
    store = ("--layout", "aiven", "--config", config)
    [row] = [json.loads(line) for line in offload("ls", *store, "--json").stdout.splitlines()]
    assert (row["topic"], row["partition"], row["start_offset"], row["end_offset"]) == ("oracle-a", 0, 0, 51)
    printed = {
        "read": offload("read", *store, TP, "--offset", "0", "--json").stdout,
        "offsets": offload("offsets", *store, TP, "--timestamp", "-3").stdout,
        "index": offload("fetch-index", *store, TP, "0", "--type", "offset", binary=True).stdout.hex(),
    }
    assert len(printed["read"].splitlines()) == 52
    return printed


@pytest.fixture
def on_filesystem(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "local" / "store").mkdir(parents=True)
    return _round_trip(tmp_path / "local", {})


def test_gcs_backend_from_the_brokers_properties(
    gcs: GcsEmulator, tmp_path: Path, on_filesystem: dict[str, str]
) -> None:
    backend = {"rsm.config.storage.backend.class": PACKAGE + "gcs.GcsStorage",
               "rsm.config.storage.gcs.bucket.name": "offload-test",
               "rsm.config.storage.gcs.endpoint.url": gcs.endpoint}  # fmt: skip
    assert _round_trip(tmp_path / "gcs", backend) == on_filesystem


def test_azure_backend_from_the_brokers_properties(
    azurite: Azurite, tmp_path: Path, on_filesystem: dict[str, str]
) -> None:
    backend = {"rsm.config.storage.backend.class": PACKAGE + "azure.AzureBlobStorage",
               "rsm.config.storage.azure.container.name": azurite.new_container(),
               "rsm.config.storage.azure.connection.string": azurite.connection_string()}  # fmt: skip
    assert _round_trip(tmp_path / "azure", backend) == on_filesystem
