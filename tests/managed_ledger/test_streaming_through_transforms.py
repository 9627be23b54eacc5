"""PIP-76 streaming offload through chunk transforms: segments are written
through the chain and read back by the broker."""

from __future__ import annotations

from pathlib import Path

from offload_driver_filesystem import FilesystemDriver

from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.model import Position
from offload_core.transforming_driver import CHAIN_KEY
from tests.test_transforming_driver import TRANSFORMING_BROKER


def test_segments_stream_through_the_chain_and_read_back(tmp_path: Path) -> None:
    config = parse_config(TRANSFORMING_BROKER)
    payloads = [b"streamed %d " % n * 20 for n in range(400)]
    with Broker(tmp_path / "data", config) as broker:
        broker.policies.update("topic", "acme/orders/stream", streaming_enabled=True)
        ledger = broker.topic("acme/orders/stream")
        for payload in payloads:
            ledger.append(payload)
        assert ledger.offload_prefix().status == "success"
        ledger.delete_hot_copies_past_lag()
        first = ledger.ledgers()[0].ledger_id
        back = ledger.read_tiered(Position(first, 0), 400, priority=ReadPriority.OFFLOADED_FIRST)
        assert [e.entry.data for e in back] == payloads
        assert {e.tier for e in back[:200]} == {"offloaded"}  # the first sealed ledgers, from their segments
    store = FilesystemDriver(str(tmp_path / "data" / "bucket"))
    segments = [i.key for i in store.list("") if i.key.count("-") == 4]  # {uuid}: a PIP-76 data object
    assert segments and all(CHAIN_KEY in store.stat(key).metadata for key in segments)
