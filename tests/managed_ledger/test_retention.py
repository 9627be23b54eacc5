"""Retention: ledgers past the time or size limit go from both tiers,
unconsumed ones stay, and the broker trims in the background, at
rollovers and on its own ticker."""

from __future__ import annotations

import time
from typing import Any

import pytest

from offload_core.errors import InvalidRangeError
from offload_core.model import Position
from tests.managed_ledger.conftest import Clock, FaultyStorePlugin
from tests.managed_ledger.test_managed_ledger import TOPIC, payload, produce


def test_retention_by_time_deletes_from_both_tiers(
    make_broker: Any, clock: Clock, faulty: FaultyStorePlugin, tmp_path: Any
) -> None:
    broker = make_broker(managedLedgerOffloadDriver="faulty", defaultRetentionTimeInMinutes=10)
    produce(broker, 250)
    ledger = broker.topic(TOPIC)
    ledger.offload_prefix()
    doomed = [s.ledger_id for s in ledger.ledgers()[:2]]
    assert ledger.trim() == []
    clock.advance(601)
    assert ledger.trim() == doomed
    assert [s.entries for s in ledger.ledgers()] == [50]
    assert list(faulty.store.list("")) == []
    assert not any((tmp_path / "data" / "ledgers" / f"{ledger_id}.log").exists() for ledger_id in doomed)
    with pytest.raises(InvalidRangeError):
        ledger.read(Position(doomed[0], 0), 1)


def test_retention_by_size_keeps_unconsumed_ledgers(make_broker: Any) -> None:
    broker = make_broker(defaultRetentionSizeInMB=0)
    ledger = broker.topic(TOPIC)
    cursor = ledger.open_cursor("slow")  # before anything is written: it holds every ledger back
    produce(broker, 350)  # each rollover runs retention in the background: nothing is consumed yet
    assert [s.entries for s in ledger.ledgers()] == [100, 100, 100, 50]
    entries = cursor.read(150)
    cursor.mark_delete(Position(entries[-1].entry.ledger_id, entries[-1].entry.entry_id))
    first_ledger = ledger.ledgers()[0].ledger_id
    # Retention 0 MB: everything consumed goes, but the cursor is halfway into ledger 2.
    assert ledger.trim() == [first_ledger]
    remaining = ledger.ledgers()[0].ledger_id
    assert ledger.read(Position(remaining, 0), 1)[0].data == payload(100)


def test_retention_runs_in_the_background_when_a_ledger_rolls_over(make_broker: Any, clock: Clock) -> None:
    broker = make_broker(defaultRetentionTimeInMinutes=10)
    produce(broker, 250)
    ledger = broker.topic(TOPIC)
    assert len(ledger.ledgers()) == 3
    clock.advance(11 * 60)
    produce(broker, 50, start=250)  # the rollover at entry 300 trims, on the broker's threads
    assert [s.entries for s in ledger.ledgers()] == [100]  # sealed just now: not past retention
    assert ledger.read(Position(ledger.ledgers()[0].ledger_id, 0), 1)[0].data == payload(200)


def test_the_broker_runs_maintenance_periodically(make_broker: Any, clock: Clock) -> None:
    broker = make_broker(defaultRetentionTimeInMinutes=10, retentionCheckIntervalInSeconds=1)
    produce(broker, 250)
    ledger = broker.topic(TOPIC)
    clock.advance(11 * 60)
    deadline = time.monotonic() + 30
    while len(ledger.ledgers()) > 1:  # nobody calls run_maintenance: the broker's ticker does
        assert time.monotonic() < deadline, "periodic maintenance never trimmed"
        time.sleep(0.05)
    assert [s.entries for s in ledger.ledgers()] == [50]
