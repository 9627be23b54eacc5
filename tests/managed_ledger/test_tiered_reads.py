"""Tiered reads: under every read priority, in every phase of an offload
(before, during, after, and once the hot copy is gone), every entry comes
back byte-identical from the tiers that priority allows, falls back as
Pulsar does, and the priority comes from the policies."""

from __future__ import annotations

from typing import Any

import pytest

from offload_core import Event, OffloadError, hookimpl
from offload_core.managed_ledger import Broker, ReadPriority
from offload_core.model import Position
from offload_core.testing.faults import Fault
from tests.managed_ledger.conftest import FaultyStorePlugin
from tests.managed_ledger.test_managed_ledger import TOPIC, payload, produce, read_all

PRIORITIES = list(ReadPriority)


def expect_reads(broker: Broker, allowed: dict[ReadPriority, str | None], count: int) -> None:
    """Under each priority: either every entry comes back byte-identical from
    the tiers given ('hot', 'offloaded', 'mixed'), or (None) reading raises."""
    for priority in PRIORITIES:
        expectation = allowed[priority]
        if expectation is None:
            with pytest.raises(OffloadError, match=priority.name):
                read_all(broker, priority)
            continue
        entries = read_all(broker, priority)
        assert [t.entry.data for t in entries] == [payload(n) for n in range(count)], priority
        tiers = {t.tier for t in entries}
        assert tiers == ({"hot", "offloaded"} if expectation == "mixed" else {expectation}), (priority, tiers)


def test_every_entry_under_every_priority_before_during_and_after_offload(
    make_broker: Any, faulty: FaultyStorePlugin
) -> None:
    broker = make_broker(managedLedgerOffloadDeletionLagMs=3_600_000)
    produce(broker, 300)
    ledger = broker.topic(TOPIC)
    ledger.append(payload(300))  # the current ledger: always hot
    count = 301

    # Before: nothing offloaded; OFFLOADED_ONLY cannot be honoured.
    before = {p: "hot" for p in PRIORITIES} | {ReadPriority.OFFLOADED_ONLY: None}
    expect_reads(broker, before, count)

    # During: objects written, metadata not yet complete -> still the hot tier.
    during: list[None] = []

    class ReadWhileOffloading:
        @hookimpl
        def offload_core_on_event(self, event: Event) -> None:
            if event.kind == "offload.lifecycle" and event.fields["step"] == "offloaded" and not during:
                during.append(None)
                expect_reads(broker, before, count)

    broker.plugins.register(ReadWhileOffloading())
    ledger.offload_prefix(ledger.last_position)
    assert during, "the read-while-offloading check did not run"
    assert [s.tier for s in ledger.ledgers()] == ["hot+offloaded"] * 3 + ["hot"]

    # After, hot copies kept (deletion lag): the priority picks the tier.
    after = {
        ReadPriority.OFFLOADED_FIRST: "mixed",
        ReadPriority.OFFLOADED_ONLY: None,  # the current ledger is not offloaded
        ReadPriority.BOOKKEEPER_FIRST: "hot",
        ReadPriority.BOOKKEEPER_ONLY: "hot",
    }
    expect_reads(broker, after, count)
    sealed_only = ledger.read_tiered(
        Position(ledger.ledgers()[0].ledger_id, 0), 300, priority=ReadPriority.OFFLOADED_ONLY
    )
    assert {t.tier for t in sealed_only} == {"offloaded"}
    assert [t.entry.data for t in sealed_only] == [payload(n) for n in range(300)]

    # After the hot copies are deleted: BOOKKEEPER_ONLY cannot be honoured.
    broker._clock.advance(3601)  # type: ignore[attr-defined]
    assert len(ledger.delete_hot_copies_past_lag()) == 3
    assert [s.tier for s in ledger.ledgers()] == ["offloaded"] * 3 + ["hot"]
    gone = {
        ReadPriority.OFFLOADED_FIRST: "mixed",
        ReadPriority.OFFLOADED_ONLY: None,
        ReadPriority.BOOKKEEPER_FIRST: "mixed",
        ReadPriority.BOOKKEEPER_ONLY: None,
    }
    expect_reads(broker, gone, count)


def test_first_priorities_fall_back_on_any_failure_and_count_it(
    make_broker: Any, faulty: FaultyStorePlugin, tmp_path: Any
) -> None:
    broker = make_broker(managedLedgerOffloadDriver="faulty", managedLedgerOffloadDeletionLagMs=3_600_000)
    produce(broker, 200)
    ledger = broker.topic(TOPIC)
    ledger.offload_prefix()
    first = Position(ledger.ledgers()[0].ledger_id, 0)

    faulty.faults.append(Fault("read", times=None, permanent=True))  # the object store is broken
    served = ledger.read_tiered(first, 200, priority=ReadPriority.OFFLOADED_FIRST)
    assert [t.entry.data for t in served] == [payload(n) for n in range(200)]
    assert {t.tier for t in served} == {"hot"}
    assert ledger.read_stats.fallbacks["offloaded->hot"] >= 1
    with pytest.raises(OffloadError, match="OFFLOADED_ONLY"):
        ledger.read_tiered(first, 200, priority=ReadPriority.OFFLOADED_ONLY)
    faulty.faults.clear()

    hot_file = tmp_path / "data" / "ledgers" / f"{first.ledger_id}.log"
    data = bytearray(hot_file.read_bytes())
    data[200] ^= 0xFF  # corrupt the hot copy
    hot_file.write_bytes(bytes(data))
    served = ledger.read_tiered(first, 100, priority=ReadPriority.BOOKKEEPER_FIRST)
    assert [t.entry.data for t in served] == [payload(n) for n in range(100)]
    assert {t.tier for t in served} == {"offloaded"}
    assert ledger.read_stats.fallbacks["hot->offloaded"] == 1
    with pytest.raises(OffloadError, match="BOOKKEEPER_ONLY"):
        ledger.read_tiered(first, 100, priority=ReadPriority.BOOKKEEPER_ONLY)
    fallbacks = [e for e in faulty.events if e.kind == "read.fallback"]
    assert {(e.fields["from"], e.fields["to"]) for e in fallbacks} == {("offloaded", "hot"), ("hot", "offloaded")}


def test_read_priority_comes_from_the_policies(make_broker: Any) -> None:
    broker = make_broker(managedLedgerOffloadDeletionLagMs=3_600_000)
    produce(broker, 150)
    ledger = broker.topic(TOPIC)
    ledger.offload_prefix()
    first = Position(ledger.ledgers()[0].ledger_id, 0)
    assert {t.tier for t in ledger.read_tiered(first, 100)} == {"offloaded"}
    broker.policies.update("namespace", "acme/prod", read_priority=ReadPriority.BOOKKEEPER_FIRST)
    assert {t.tier for t in ledger.read_tiered(first, 100)} == {"hot"}
    broker.policies.update("topic", TOPIC, read_priority=ReadPriority.OFFLOADED_FIRST)
    assert {t.tier for t in ledger.read_tiered(first, 100)} == {"offloaded"}
