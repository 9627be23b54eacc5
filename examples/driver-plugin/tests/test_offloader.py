"""The example's offloader keeps the offloader contract and serves a topic,
found the way the broker finds it: through the installed entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core import PluginManager, StorageDriver, open_driver
from offload_core.managed_ledger import Broker, parse_config
from offload_core.model import Position
from offload_core.testing import OffloaderContract
from offload_core.testing.offloader_contract import MakeOffloader


class TestPackedOffloader(OffloaderContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> StorageDriver:
        return open_driver(f"sqlite://{tmp_path / 'bucket.db'}")

    @pytest.fixture
    def make_offloader(self) -> MakeOffloader:
        spec = PluginManager().offloader_for_driver("sqlite")
        assert (spec.name, spec.plugin.distribution) == ("packed", "offload-driver-sqlite-example")
        return lambda driver: spec.factory(driver)  # type: ignore[no-any-return]


def test_the_packed_offloader_serves_a_topic_through_the_hook(tmp_path: Path) -> None:
    bucket = tmp_path / "bucket.db"
    config = parse_config({
        "managedLedgerOffloadDriver": f"sqlite://{bucket}",
        "managedLedgerMaxEntriesPerLedger": 50,
        "managedLedgerOffloadDeletionLagMs": 0,
    })  # fmt: skip
    with Broker(tmp_path / "data", config) as broker:
        topic = broker.topic("ex/ample/topic")
        written = [b"message %d" % n for n in range(160)]
        for payload in written:
            topic.append(payload)
        status = topic.offload_prefix()
        assert status.status == "success" and status.offloaded_ledgers == 3
        assert [s.tier for s in topic.ledgers()] == ["offloaded"] * 3 + ["hot"]
        first = topic.ledgers()[0].ledger_id
        served = topic.read_tiered(Position(first, 0), 200, priority="tiered-storage-first")
        assert [t.entry.data for t in served] == written
        assert {t.tier for t in served[:150]} == {"offloaded"}
    keys = [info.key for info in open_driver(f"sqlite://{bucket}").list("")]
    assert len(keys) == 3 and all(key.endswith(".packed") for key in keys)
