"""The managed ledger: appends, rollover, recovery, the offload lifecycle (tiered reads and retention
have their own modules, which share this one's helpers)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from offload_core import Event, OffloadError, hookimpl
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import Broker, ReadPriority
from offload_core.model import Position
from offload_core.proto import ManagedLedgerInfo
from offload_core.testing.faults import Fault
from tests.managed_ledger.conftest import Clock, FaultyStorePlugin

TOPIC = "acme/prod/orders"


def payload(n: int) -> bytes:
    return f"message-{n}-".encode() * (1 + n % 7)


def produce(broker: Broker, count: int, start: int = 0) -> list[Position]:
    ledger = broker.topic(TOPIC)
    positions = [ledger.append(payload(n)) for n in range(start, start + count)]
    assert broker.drain(30)  # threshold offloads started by the appends run in the background
    return positions


def read_all(broker: Broker, priority: ReadPriority | None = None) -> list[Any]:
    ledger = broker.topic(TOPIC)
    first = ledger.ledgers()[0].ledger_id
    return ledger.read_tiered(Position(first, 0), 10**6, priority=priority)


# -- appending, rollover, recovery ------------------------------------------------------


def test_append_and_read_across_ledgers(make_broker: Any) -> None:
    broker = make_broker()
    positions = produce(broker, 250)
    ledger = broker.topic(TOPIC)
    assert [s.entries for s in ledger.ledgers()] == [100, 100, 50]
    assert [s.sealed for s in ledger.ledgers()] == [True, True, False]
    assert positions[100] == Position(positions[99].ledger_id + 1, 0)
    assert [e.data for e in ledger.read(positions[95], 10)] == [payload(n) for n in range(95, 105)]
    assert ledger.last_position == positions[-1]
    assert ledger.read(positions[-1], 10)[0].data == payload(249)
    assert ledger.read(Position(positions[-1].ledger_id, 50), 10) == []


def test_rollover_by_size_and_by_age(make_broker: Any, clock: Clock) -> None:
    broker = make_broker(
        managedLedgerMaxEntriesPerLedger=10**6,
        managedLedgerMaxSizePerLedgerMbytes=1,
        managedLedgerMaxLedgerRolloverTimeMinutes=1,
    )
    ledger = broker.topic(TOPIC)
    for _ in range(3):
        ledger.append(b"x" * (600 << 10))
    assert [s.entries for s in ledger.ledgers()] == [2, 1]
    clock.advance(61)
    assert ledger.roll_over_if_due()
    assert [s.sealed for s in ledger.ledgers()] == [True, True]


def test_reopen_seals_the_last_ledger_and_appends_to_a_new_one(make_broker: Any) -> None:
    broker = make_broker()
    produce(broker, 150)
    broker.close()
    broker = make_broker()
    ledger = broker.topic(TOPIC)
    assert [(s.entries, s.sealed) for s in ledger.ledgers()] == [(100, True), (50, True)]
    position = ledger.append(b"after reopen")
    assert position.entry_id == 0 and position.ledger_id > ledger.ledgers()[1].ledger_id
    assert [t.entry.data for t in read_all(broker)][149:] == [payload(149), b"after reopen"]


def test_torn_tail_is_cut_on_reopen_and_never_served(make_broker: Any, tmp_path: Any) -> None:
    broker = make_broker()
    positions = produce(broker, 130)
    broker.close()
    current = tmp_path / "data" / "ledgers" / f"{positions[-1].ledger_id}.log"
    with open(current, "ab") as out:
        out.write(b"\x00\x00\x01\x00" + b"\x00" * 8 + b"torn")  # a record cut off mid-write
    broker = make_broker()
    entries = [e.entry.data for e in read_all(broker)]
    assert entries == [payload(n) for n in range(130)]


def test_a_last_ledger_whose_file_header_was_torn_is_dropped_on_reopen(make_broker: Any, tmp_path: Any) -> None:
    """Killed while the current ledger's file was being created: the
    metadata names the ledger, its file holds part of its header."""
    broker = make_broker()
    positions = produce(broker, 130)
    broker.close()
    current = tmp_path / "data" / "ledgers" / f"{positions[-1].ledger_id}.log"
    current.write_bytes(b"OLEDG")
    broker = make_broker()
    ledger = broker.topic(TOPIC)
    assert [s.entries for s in ledger.ledgers()] == [100]
    assert not current.exists()
    assert [e.entry.data for e in read_all(broker)] == [payload(n) for n in range(100)]
    assert ledger.append(b"after reopen").ledger_id > positions[-1].ledger_id


def test_an_empty_last_ledger_is_dropped_on_reopen(make_broker: Any) -> None:
    broker = make_broker()
    produce(broker, 100)  # exactly fills ledger 1, which is sealed; no current ledger
    ledger = broker.topic(TOPIC)
    ledger.append(b"x")
    broker.close()
    broker = make_broker()
    assert [s.entries for s in broker.topic(TOPIC).ledgers()] == [100, 1]


def test_only_one_owner(make_broker: Any) -> None:
    first = make_broker()
    first.topic(TOPIC)
    second = make_broker()
    with pytest.raises(OffloadError, match="open in another process"):
        second.topic(TOPIC)


def test_durable_cursor(make_broker: Any) -> None:
    broker = make_broker()
    produce(broker, 230)
    cursor = broker.topic(TOPIC).open_cursor("catch-up")
    first = cursor.read(120)
    assert [t.entry.data for t in first] == [payload(n) for n in range(120)]
    cursor.mark_delete(Position(first[-1].entry.ledger_id, first[-1].entry.entry_id))
    broker.close()
    broker = make_broker()
    cursor = broker.topic(TOPIC).open_cursor("catch-up")
    assert [t.entry.data for t in cursor.read(1000)] == [payload(n) for n in range(120, 230)]


# -- the offload lifecycle -------------------------------------------------------------------


def test_lifecycle_steps_objects_and_metadata(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(managedLedgerOffloadDriver="faulty", managedLedgerOffloadDeletionLagMs=0)
    produce(broker, 120)
    ledger = broker.topic(TOPIC)
    status = ledger.offload_prefix(ledger.last_position)
    sealed_id = ledger.ledgers()[0].ledger_id
    assert status.status == "success" and status.offloaded_ledgers == 1
    assert status.first_unoffloaded == Position(ledger.ledgers()[1].ledger_id, 0)
    assert faulty.steps() == ["prepared", "offloaded", "completed", "hot-delete-marked", "hot-deleted"]
    info = ManagedLedgerInfo.FromString(broker.store.get(f"managed-ledgers/{ledger.name}").value)  # type: ignore[union-attr]
    context = info.ledgerInfo[0].offloadContext
    assert context.complete and context.bookkeeperDeleted and context.timestamp == int(broker._clock() * 1000)  # type: ignore[attr-defined]
    assert context.driverMetadata.name == "faulty"
    uid = ledger.ledgers()[0].uuid
    keys = [info.key for info in faulty.store.list("")]
    assert keys == [v1.data_key(uid, sealed_id), v1.index_key(uid, sealed_id)]  # type: ignore[arg-type]
    assert faulty.store.stat(keys[0]).metadata["managedledgername"] == ledger.name
    assert ledger.offload_status() == status


def test_failed_attempt_is_recorded_and_cleaned_by_the_next(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(managedLedgerOffloadDriver="faulty")
    produce(broker, 150)
    ledger = broker.topic(TOPIC)
    faulty.faults.append(Fault("write", key="-index", permanent=True))
    status = ledger.offload_prefix()
    assert status.status == "error" and "injected" in (status.error or "")
    assert ledger.offload_status().status == "error"
    # The failed attempt was abandoned: no ticket, no objects.
    assert (ledger.ledgers()[0].tier, ledger.ledgers()[0].uuid) == ("hot", None)
    assert list(faulty.store.list("")) == []
    # When the cleanup fails too (the store refuses deletes), the ticket stays,
    # with the cleanup's error, until a later attempt can clean it.
    faulty.faults[:] = [Fault("write", key="-index", permanent=True), Fault("delete", times=None, permanent=True)]
    assert ledger.offload_prefix().status == "error"
    failed_uid = ledger.ledgers()[0].uuid
    assert ledger.ledgers()[0].tier == "offloading" and failed_uid is not None
    (unfinished,) = ledger.unfinished_offloads()
    assert unfinished.uuid == failed_uid and "injected permanent failure: delete" in (unfinished.cleanup_error or "")
    assert [info.key for info in faulty.store.list("")] == [v1.data_key(failed_uid, unfinished.ledger_id)]
    faulty.faults.clear()
    assert ledger.offload_prefix().status == "success"
    new_uid = ledger.ledgers()[0].uuid
    assert new_uid != failed_uid
    assert all(failed_uid not in info.key for info in faulty.store.list(""))
    assert ledger.unfinished_offloads() == []


def test_size_threshold_walks_newest_to_oldest(make_broker: Any) -> None:
    # Each ledger holds 100 entries, about 4.7 KB: keep about two ledgers' worth hot.
    broker = make_broker(managedLedgerOffloadThresholdInBytes=10_000)
    produce(broker, 500)  # the trigger runs as each ledger seals; the 500th entry seals the fifth
    states = broker.topic(TOPIC).ledgers()
    hot_bytes = 0
    for state in reversed(states):
        hot_bytes += state.size
        expected = "hot" if hot_bytes <= 10_000 or not state.sealed else "hot+offloaded"
        assert state.tier == expected, (state, hot_bytes)
    assert any(s.tier == "hot+offloaded" for s in states) and states[-2].tier == "hot"


def test_time_threshold(make_broker: Any, clock: Clock) -> None:
    broker = make_broker(managedLedgerOffloadThresholdInSeconds=600)
    produce(broker, 250)
    ledger = broker.topic(TOPIC)
    assert ledger.maybe_offload() is None
    clock.advance(601)
    status = ledger.maybe_offload()
    assert status is not None and status.offloaded_ledgers == 2
    assert [s.tier for s in ledger.ledgers()] == ["hot+offloaded", "hot+offloaded", "hot"]


def test_periodic_maintenance_runs_every_time_based_rule(make_broker: Any, clock: Clock) -> None:
    broker = make_broker(
        managedLedgerOffloadThresholdInSeconds=60,
        managedLedgerOffloadDeletionLagMs=120_000,
        managedLedgerMaxLedgerRolloverTimeMinutes=10,
        defaultRetentionTimeInMinutes=30,
    )
    produce(broker, 150)
    ledger = broker.topic(TOPIC)
    done = ledger.run_maintenance()
    assert done == {"rolled_over": False, "streamed": 0, "offload": None, "hot_deleted": [], "trimmed": []}
    clock.advance(61)
    done = ledger.run_maintenance()
    assert done["offload"].offloaded_ledgers == 1 and done["hot_deleted"] == []  # type: ignore[union-attr]
    clock.advance(540)
    done = ledger.run_maintenance()
    assert done["rolled_over"] is True and done["hot_deleted"] == [ledger.ledgers()[0].ledger_id]
    assert [s.tier for s in ledger.ledgers()] == ["offloaded", "hot"]
    clock.advance(1800)
    trimmed = ledger.run_maintenance()["trimmed"]
    assert len(trimmed) == 2  # type: ignore[arg-type]
    assert ledger.ledgers() == []


def test_maintenance_does_and_reports_what_its_rollover_made_due(
    make_broker: Any, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rollover in run_maintenance used to hand a threshold offload and a
    trim to the background threads as well; run late, after the clock had
    moved, they did the next run's work and that run reported nothing (the
    rare failure of test_periodic_maintenance_runs_every_time_based_rule)."""
    broker = make_broker(
        managedLedgerOffloadThresholdInSeconds=60,
        managedLedgerMaxLedgerRolloverTimeMinutes=10,
        defaultRetentionTimeInMinutes=30,
    )
    late: list[Callable[[], object]] = []
    # Background threads that lag: every job waits until this test runs it.
    monkeypatch.setattr(broker.background, "submit", lambda what, job: late.append(job))
    produce(broker, 50)
    ledger = broker.topic(TOPIC)
    sealed = ledger.ledgers()[0].ledger_id
    clock.advance(600)
    assert ledger.run_maintenance()["rolled_over"] is True
    clock.advance(1800)
    for job in late:
        job()
    done = ledger.run_maintenance()
    assert getattr(done["offload"], "offloaded_ledgers", 0) == 1 and done["trimmed"] == [sealed]
    assert ledger.ledgers() == []


def test_deletion_lag(make_broker: Any, clock: Clock, tmp_path: Any) -> None:
    broker = make_broker(managedLedgerOffloadDeletionLagMs=60_000)
    produce(broker, 120)
    ledger = broker.topic(TOPIC)
    ledger.offload_prefix()
    first = ledger.ledgers()[0].ledger_id
    assert (tmp_path / "data" / "ledgers" / f"{first}.log").exists()
    clock.advance(59)
    assert ledger.delete_hot_copies_past_lag() == []
    clock.advance(1)
    assert ledger.delete_hot_copies_past_lag() == [first]
    assert not (tmp_path / "data" / "ledgers" / f"{first}.log").exists()


def test_offload_and_trim_are_mutually_exclusive(make_broker: Any, clock: Clock) -> None:
    broker = make_broker(defaultRetentionTimeInMinutes=1)
    produce(broker, 250)
    ledger = broker.topic(TOPIC)
    clock.advance(120)
    holding, release, trimmed = threading.Event(), threading.Event(), threading.Event()
    # What each run did, in the order it did it: recorded from inside the
    # runs (their events), not after they return, when the other may already
    # have taken the lock (that race once made this test flaky).
    events: list[str] = []

    class HoldOffload:
        @hookimpl
        def offload_core_on_event(self, event: Event) -> None:
            if event.kind == "offload.lifecycle":
                events.append(f"offload {event.fields['step']}")
            elif event.kind == "ledger.trimmed":
                events.append("trimmed")
            if event.kind == "offload.lifecycle" and event.fields["step"] == "prepared" and not release.is_set():
                holding.set()
                release.wait(10)

    broker.plugins.register(HoldOffload())
    offload = threading.Thread(target=ledger.offload_prefix)
    offload.start()
    assert holding.wait(10), "the offload never started"
    trim = threading.Thread(target=lambda: (ledger.trim(), trimmed.set()))
    trim.start()
    assert not trimmed.wait(0.5), "trim ran while an offload was in progress"
    release.set()
    offload.join(10)
    trim.join(10)
    completed = [n for n, kind in enumerate(events) if kind == "offload completed"]
    trims = [n for n, kind in enumerate(events) if kind == "trimmed"]
    assert len(completed) == 2 and trims, events
    assert max(completed) < min(trims), events


def test_bad_input() -> None:
    with pytest.raises(Exception, match="tenant/namespace/topic"):
        Broker(os.devnull + "-unused").topic("no-namespace")  # type: ignore[arg-type]
