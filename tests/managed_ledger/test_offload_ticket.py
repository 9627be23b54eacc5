"""An offload in three steps: prepare (metadata), write (anywhere), complete or abandon."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from offload_core import open_driver
from offload_core.errors import OffloadError
from offload_core.managed_ledger import Broker, OffloadTicket, ReadPriority, parse_config, write_offload
from offload_core.model import Position
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers

TOPIC = "persistent://public/default/tickets"
CONFIG = {"managedLedgerMaxEntriesPerLedger": 50, "managedLedgerOffloadMaxBlockSizeInBytes": 4096}


def open_broker(data: Path) -> Broker:
    return Broker(data, parse_config(CONFIG))


def bucket_ledgers(data: Path) -> list[tuple[int, str, bool]]:
    return [
        (found.ledger_id, found.uuid, found.complete)
        for found in find_offloaded_ledgers(open_driver(f"file://{data / 'bucket'}"))
    ]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    with open_broker(tmp_path / "data") as broker:
        ledger = broker.topic(TOPIC)
        for n in range(120):
            ledger.append(b"message %d" % n)
    return tmp_path / "data"


def test_objects_written_in_another_process_complete_the_offload(data: Path) -> None:
    with open_broker(data) as broker:
        ledger = broker.topic(TOPIC)
        targets = ledger.offloadable_ledgers()
        tickets = [ledger.prepare_offload(ledger_id) for ledger_id in targets]
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            results = pool.map(write_offload, tickets)
        assert [r.ledger_id for r in results] == targets
        for ticket in tickets:
            ledger.complete_offload(ticket)
        assert {state.ledger_id: state.tier for state in ledger.ledgers()} == {
            targets[0]: "hot+offloaded",
            targets[1]: "hot+offloaded",
            targets[2]: "hot+offloaded",
        }
        entries = ledger.read(Position(targets[0], 0), 120, priority=ReadPriority.OFFLOADED_ONLY)
        assert [entry.data for entry in entries] == [b"message %d" % n for n in range(120)]
    assert sorted(bucket_ledgers(data)) == sorted((t.ledger_id, t.uuid, True) for t in tickets)


def test_an_abandoned_offload_leaves_no_objects_and_can_be_retried(data: Path) -> None:
    with open_broker(data) as broker:
        ledger = broker.topic(TOPIC)
        first = ledger.offloadable_ledgers()[0]
        ticket = ledger.prepare_offload(first)
        write_offload(ticket)
        ledger.abandon_offload(ticket)
        assert bucket_ledgers(data) == []
        assert ledger.offloadable_ledgers()[0] == first
        retry = ledger.prepare_offload(first)
        write_offload(retry)
        with pytest.raises(OffloadError, match="uid changed"):
            ledger.complete_offload(ticket)
        ledger.complete_offload(retry)
        ledger.abandon_offload(retry)  # a completed offload is never undone
    assert bucket_ledgers(data) == [(first, retry.uuid, True)]


def test_a_ticket_the_hot_file_does_not_match_is_refused_without_objects(data: Path) -> None:
    with open_broker(data) as broker:
        ledger = broker.topic(TOPIC)
        ticket = ledger.prepare_offload(ledger.offloadable_ledgers()[0])
    wrong = OffloadTicket(**{**ticket.__dict__, "entries": ticket.entries + 1})
    with pytest.raises(OffloadError, match="prepared for"):
        write_offload(wrong)
    assert bucket_ledgers(data) == []


def test_objects_of_a_prepared_offload_never_completed_are_cleaned_on_reopen(data: Path) -> None:
    with open_broker(data) as broker:
        ledger = broker.topic(TOPIC)
        ticket = ledger.prepare_offload(ledger.offloadable_ledgers()[0])
        write_offload(ticket)
    assert bucket_ledgers(data) == [(ticket.ledger_id, ticket.uuid, True)]
    with open_broker(data) as broker:
        broker.topic(TOPIC)
    assert bucket_ledgers(data) == []


def test_only_sealed_ledgers_not_yet_offloaded_can_be_prepared(data: Path) -> None:
    with open_broker(data) as broker:
        ledger = broker.topic(TOPIC)
        current = ledger.append(b"current")
        with pytest.raises(OffloadError, match="not sealed"):
            ledger.prepare_offload(current.ledger_id)
        done = ledger.offloadable_ledgers()[0]
        ticket = ledger.prepare_offload(done)
        write_offload(ticket)
        ledger.complete_offload(ticket)
        with pytest.raises(OffloadError, match="already offloaded"):
            ledger.prepare_offload(done)
