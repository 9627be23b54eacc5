"""The embedded broker offloading to a cloud store chosen by its config file."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.managed_ledger import Broker, ReadPriority, load_config
from offload_core.model import Position
from tests.emulators import MotoS3

pytestmark = pytest.mark.emulator


def test_broker_config_sends_ledgers_to_s3(s3: MotoS3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    config = tmp_path / "broker.toml"
    config.write_text(
        'managedLedgerOffloadDriver = "aws-s3"\n'
        'managedLedgerOffloadBucket = "offload-test"\n'
        f'managedLedgerOffloadServiceEndpoint = "{s3.endpoint}"\n'
        'managedLedgerOffloadRegion = "us-east-1"\n'
        "managedLedgerOffloadMaxBlockSizeInBytes = 5242880\n"
        "managedLedgerOffloadDeletionLagMs = 0\n"
        "managedLedgerMaxEntriesPerLedger = 500\n"
    )
    with Broker(tmp_path / "data", load_config(config)) as broker:
        topic = broker.topic("acme/prod/orders")
        positions = [topic.append(f"order {n}".encode() * 50) for n in range(1200)]
        status = topic.offload_prefix(positions[-1])
        assert status.status == "success" and status.offloaded_ledgers == 2
        keys = [obj["Key"] for obj in s3.client().list_objects_v2(Bucket="offload-test")["Contents"]]
        assert len(keys) == 4 and all("-ledger-" in key for key in keys)
        served = topic.read_tiered(Position(positions[0].ledger_id, 0), 1200, priority=ReadPriority.OFFLOADED_FIRST)
        assert [t.entry.data for t in served] == [f"order {n}".encode() * 50 for n in range(1200)]
        assert [t.tier for t in served] == ["offloaded"] * 1000 + ["hot"] * 200
