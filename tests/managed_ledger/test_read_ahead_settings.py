"""The broker's read-ahead pool and entry-offsets switch: one budget for
every topic, and indexes exactly as Pulsar writes them when switched off."""

from __future__ import annotations

from typing import Any

import pytest

from offload_core import ConfigError
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import ReadPriority, parse_config
from offload_core.model import Position
from tests.managed_ledger.conftest import FaultyStorePlugin

TOPICS = ("acme/prod/a", "acme/prod/b")


def fill_and_offload(broker: Any, topic: str, count: int = 250) -> None:
    ledger = broker.topic(topic)
    for n in range(count):
        ledger.append(f"{topic}-{n}-".encode() * 20)
    ledger.offload_prefix(ledger.last_position)


def read_offloaded(broker: Any, topic: str) -> list[bytes]:
    ledger = broker.topic(topic)
    first = ledger.ledgers()[0].ledger_id
    entries = []
    position = Position(first, 0)
    while True:
        batch = ledger.read_tiered(position, 20, priority=ReadPriority.OFFLOADED_FIRST)
        sealed = [t for t in batch if t.tier == "offloaded"]
        entries += [t.entry.data for t in sealed]
        if len(sealed) < len(batch) or not batch:
            return entries
        last = batch[-1].entry
        position = Position(last.ledger_id, last.entry_id + 1)


def test_every_topic_reads_ahead_within_the_brokers_one_budget(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(
        managedLedgerOffloadDriver="faulty",
        managedLedgerOffloadDeletionLagMs=0,
        managedLedgerOffloadReadBufferSizeInBytes=512,  # smaller than a ledger: the stream serves the rest
        managedLedgerOffloadReadAheadBytes=16384,
        managedLedgerOffloadReadAheadBytesPerReader=8192,
        managedLedgerOffloadReadAheadRangeBytes=2048,
    )
    for topic in TOPICS:
        fill_and_offload(broker, topic)
    for topic in TOPICS:
        assert read_offloaded(broker, topic) == [f"{topic}-{n}-".encode() * 20 for n in range(200)]
    pool = broker.read_ahead
    assert pool.fetches > 0
    assert pool.peak_bytes <= 16384 + 2 * 2048 * 2  # the budget, plus what each reader needed to progress


def test_entry_offsets_switched_off_leave_indexes_exactly_as_pulsar_writes_them(
    make_broker: Any, faulty: FaultyStorePlugin
) -> None:
    broker = make_broker(managedLedgerOffloadDriver="faulty", managedLedgerOffloadEntryOffsetsEnabled=False)
    fill_and_offload(broker, TOPICS[0])
    indexes = [info for info in faulty.store.list("") if info.key.endswith("-ledger-index") or "index" in info.key]
    assert indexes
    for info in indexes:
        assert v1.decode_index(faulty.store.read(info.key)).trailer == b""


def test_with_entry_offsets_each_index_carries_them(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(managedLedgerOffloadDriver="faulty")
    fill_and_offload(broker, TOPICS[0])
    indexes = [info for info in faulty.store.list("") if "index" in info.key]
    assert indexes
    assert all(v1.decode_index(faulty.store.read(info.key)).trailer for info in indexes)


def test_a_reader_allowance_below_one_range_is_refused_naming_both_keys() -> None:
    with pytest.raises(ConfigError, match="ReadAheadBytesPerReader .*below one range.*RangeBytes"):
        parse_config(
            {"managedLedgerOffloadReadAheadBytesPerReader": 1024, "managedLedgerOffloadReadAheadRangeBytes": 4096}
        )


def test_a_reader_finishing_a_ledger_has_the_next_one_read_ahead(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(
        managedLedgerOffloadDriver="faulty",
        managedLedgerOffloadDeletionLagMs=0,
        managedLedgerOffloadReadBufferSizeInBytes=512,
        managedLedgerOffloadReadAheadRangeBytes=2048,
        managedLedgerOffloadReadAheadBytesPerReader=8192,
    )
    fill_and_offload(broker, TOPICS[0], count=301)
    ledger = broker.topic(TOPICS[0])
    sealed = [state.ledger_id for state in ledger.ledgers() if state.tier == "offloaded"]
    assert len(sealed) >= 3

    def data_reads(ledger_id: int) -> int:
        return sum(1 for e in faulty.events if e.kind == "storage.request" and e.fields["op"] == "read"
                   and str(e.fields["key"]).endswith(f"-ledger-{ledger_id}"))  # fmt: skip

    for before, after in zip(sealed, sealed[1:], strict=False):
        position = Position(before, 0)
        while position.ledger_id == before:
            batch = ledger.read_tiered(position, 10, priority=ReadPriority.OFFLOADED_FIRST)
            last = batch[-1].entry
            position = Position(last.ledger_id, last.entry_id + 1)
            if len(batch) < 10 or last.entry_id == 99:
                break
        assert broker.drain(30)
        assert data_reads(after) > 0, f"ledger {after} was not read ahead before its first read"
        assert [t.entry.data for t in ledger.read_tiered(Position(after, 0), 100,
                                                         priority=ReadPriority.OFFLOADED_FIRST)
                if t.entry.ledger_id == after] == [f"{TOPICS[0]}-{n}-".encode() * 20
                                                   for n in range(sealed.index(after) * 100,
                                                                  sealed.index(after) * 100 + 100)]  # fmt: skip
