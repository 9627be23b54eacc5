"""PIP-76 streaming offload wired into the managed ledger."""

from __future__ import annotations

import random
from typing import Any

import pytest

from offload_core.errors import StateError
from offload_core.formats import pulsar_v2 as v2
from offload_core.managed_ledger import Broker, ReadPriority
from offload_core.model import Position
from offload_core.testing.faults import Fault
from tests.managed_ledger.conftest import Clock, FaultyStorePlugin
from tests.offload.test_streaming_offload import wait_for

TOPIC = "acme/prod/stream"

STREAMING = {"managedLedgerOffloadDriver": "faulty", "managedLedgerOffloadStreamingEnabled": True}


def payload(n: int, size: int = 0) -> bytes:
    base = f"entry-{n}-".encode()
    return (base * (1 + (size or 40 + n % 300) // len(base)))[: size or 40 + n % 300]


def produce(broker: Broker, count: int, start: int = 0, size: int = 0) -> list[Position]:
    ledger = broker.topic(TOPIC)
    positions = [ledger.append(payload(n, size)) for n in range(start, start + count)]
    assert broker.drain(30)
    return positions


def stored_segments(faulty: FaultyStorePlugin) -> set[str]:
    found = set()
    for info in faulty.store.list():
        parsed = v2.parse_segment_key(info.key)
        if parsed is not None:
            found.add(parsed.uuid)
    return found


def referenced_segments(broker: Broker) -> set[str]:
    return {s.uuid for s in broker.topic(TOPIC).segments()}


def read_everything(broker: Broker, priority: ReadPriority | None = None) -> list[Any]:
    ledger = broker.topic(TOPIC)
    return ledger.read_tiered(Position(ledger.ledgers()[0].ledger_id, 0), 10**6, priority=priority)


def test_entries_reach_the_store_while_their_ledger_is_still_open(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(**STREAMING)
    produce(broker, 60)
    ledger = broker.topic(TOPIC)
    status = ledger.offload_prefix()  # with streaming on: close and complete the open segment
    assert status.status == "success"
    (state,) = ledger.ledgers()
    assert not state.sealed and state.tier == "hot"
    (segment,) = ledger.segments()
    assert segment.status == "complete" and segment.ledgers == ((state.ledger_id, 0, 59),)
    assert stored_segments(faulty) == {segment.uuid}
    index = v2.decode_index(faulty.store.read(v2.segment_index_key(segment.uuid)))
    info = index.section(state.ledger_id).info()
    assert (info.entries, info.timestamp) == (60, 0)  # Pulsar's open-ledger LedgerInfo


def test_a_pump_streams_what_was_written_when_it_started(make_broker: Any, clock: Clock, monkeypatch: Any) -> None:
    """Entries a producer appends while a pump runs are the next pump's: a
    pump that chased them would take the ledger's lock for a few entries
    at a time, as often as the producer takes it."""
    broker = make_broker(managedLedgerOffloadDriver="faulty", managedLedgerMaxEntriesPerLedger=1000)
    ledger = broker.topic(TOPIC)
    for n in range(30):
        ledger.append(b"before %d" % n)
    # On now: appends look the policy up again only a second (of the test's
    # clock) later, so no pump but the test's runs.
    broker.policies.update("topic", TOPIC, streaming_enabled=True)
    first_ledger = ledger.ledgers()[0].ledger_id
    original = ledger._detach_hot
    appended = []

    def appending_meanwhile(ledger_id: int, first: int, last: int) -> Any:
        if not appended:  # the producer goes on while the pump works
            appended.extend(ledger.append(b"during %d" % n) for n in range(20))
        return original(ledger_id, first, last)

    monkeypatch.setattr(ledger, "_detach_hot", appending_meanwhile)
    with ledger._stream_lock:  # one pass of the pump, as pump_streaming makes them
        assert ledger._pump_once() == 30
    assert len(appended) == 20 and ledger._stream_next == Position(first_ledger, 30)
    monkeypatch.setattr(ledger, "_detach_hot", original)
    broker.drain()
    assert ledger.pump_streaming() == 20  # the next pump takes them
    assert ledger.offload_prefix().status == "success"
    (segment,) = ledger.segments()
    assert segment.ledgers == ((first_ledger, 0, 49),)


def test_appends_within_a_second_of_the_last_pump_are_streamed_without_another_append(make_broker: Any) -> None:
    """The first append requests a pump; the ones after it in the same
    second (the test's clock stands still) do not, and there is no periodic
    maintenance: before, they waited for the next append a second later,
    or for maintenance (every 120 s by default)."""
    broker = make_broker(**STREAMING)
    ledger = broker.topic(TOPIC)
    first = ledger.append(payload(0))
    wait_for(lambda: ledger._stream_next == Position(first.ledger_id, 1))  # the pump it requested has run
    positions = [first] + [ledger.append(payload(n)) for n in range(1, 30)]
    wait_for(lambda: ledger._stream_next == Position(first.ledger_id, 30))  # no drain: on their own
    assert ledger.offload_prefix().status == "success"
    (segment,) = ledger.segments()
    assert segment.ledgers == ((positions[0].ledger_id, 0, 29),)


def test_streamed_ledgers_are_read_from_their_segments_under_every_priority(
    make_broker: Any, clock: Clock, faulty: FaultyStorePlugin
) -> None:
    broker = make_broker(**STREAMING, managedLedgerOffloadDeletionLagMs=3_600_000)
    produce(broker, 250)
    ledger = broker.topic(TOPIC)
    ledger.complete_current_segment()
    assert broker.drain(30)  # the deletion check it scheduled has run (nothing was past the lag)
    assert [s.tier for s in ledger.ledgers()] == ["hot+offloaded", "hot+offloaded", "hot"]
    expected = [payload(n) for n in range(250)]
    for priority in ReadPriority:
        if priority is ReadPriority.OFFLOADED_ONLY:
            sealed = ledger.read_tiered(Position(ledger.ledgers()[0].ledger_id, 0), 200, priority=priority)
            assert [e.entry.data for e in sealed] == expected[:200]
            assert {e.tier for e in sealed} == {"offloaded"}
            continue
        entries = read_everything(broker, priority)
        assert [e.entry.data for e in entries] == expected
        want = "hot" if priority.name.startswith("BOOKKEEPER") else "offloaded"
        assert {e.tier for e in entries[:200]} == {want}
    clock.advance(3601)
    assert ledger.delete_hot_copies_past_lag() == [s.ledger_id for s in ledger.ledgers()[:2]]
    entries = read_everything(broker, ReadPriority.BOOKKEEPER_FIRST)
    assert [e.entry.data for e in entries] == expected
    assert [e.tier for e in entries[:200]] == ["offloaded"] * 200
    with pytest.raises(StateError):
        read_everything(broker, ReadPriority.BOOKKEEPER_ONLY)


def test_segments_span_ledgers_and_ledgers_span_segments(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(**STREAMING, maxSizePerOffloadSegmentMbytes=1, managedLedgerOffloadDeletionLagMs=0)
    produce(broker, 1300, size=2000)  # about 2.6 MB in ledgers of 100 entries
    ledger = broker.topic(TOPIC)
    ledger.complete_current_segment()
    assert broker.drain(30)  # the hot copies past the lag (0) are deleted in the background
    assert {s.tier for s in ledger.ledgers()} == {"offloaded"}
    segments = ledger.segments()
    assert len(segments) == 3 and {s.status for s in segments} == {"complete"}
    assert all(len(s.ledgers) > 1 for s in segments)
    spanning = {lid for s in segments for lid, first, _ in s.ledgers if first > 0}
    assert spanning  # some ledger continues from one segment into the next
    assert stored_segments(faulty) == {s.uuid for s in segments}
    entries = read_everything(broker, ReadPriority.BOOKKEEPER_FIRST)
    assert [e.entry.data for e in entries] == [payload(n, 2000) for n in range(1300)]
    assert {e.tier for e in entries[: 1300 - 1300 % 100]} == {"offloaded"}


def test_a_segment_closes_at_its_age(make_broker: Any, clock: Clock, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(**STREAMING, maxOffloadSegmentRolloverTimeMinutes=1)
    produce(broker, 30)
    ledger = broker.topic(TOPIC)
    broker.drain()
    ledger.pump_streaming()  # the entries written while the first pump ran, too
    assert broker.drain(30)
    assert [s.status for s in ledger.segments()] == ["assigned"]
    assert stored_segments(faulty) == set()
    clock.advance(61)
    ledger.run_maintenance()
    assert [s.status for s in ledger.segments()] == ["complete"]
    assert len(stored_segments(faulty)) == 1


def test_a_failed_upload_is_retried_under_the_same_segment(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(**STREAMING)
    produce(broker, 150)
    ledger = broker.topic(TOPIC)
    faulty.faults.append(Fault("part", nth=1, permanent=True))
    status = ledger.complete_current_segment()
    assert status.status == "error"
    (failed,) = ledger.segments()
    assert failed.status == "failed" and "injected" in (failed.error or "")
    assert stored_segments(faulty) == set()
    produce(broker, 20, start=150)  # appends go on; nothing new is created meanwhile
    assert ledger.complete_current_segment().status == "success"
    (done,) = ledger.segments()
    assert done.uuid == failed.uuid and done.status == "complete"
    assert stored_segments(faulty) == {done.uuid}
    assert [e.entry.data for e in read_everything(broker)] == [payload(n) for n in range(170)]


def test_trimmed_ledgers_free_a_segment_only_with_its_last_ledger(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(**STREAMING, maxSizePerOffloadSegmentMbytes=1)
    produce(broker, 1350, size=2000)
    ledger = broker.topic(TOPIC)
    ledger.complete_current_segment()
    assert len(ledger.segments()) == 3
    with ledger._lock:
        doomed = [info for info in ledger._info.ledgerInfo if info.HasField("entries")]
    random.Random(5).shuffle(doomed)
    for info in doomed:
        ledger._delete_ledger(info)
        referenced = referenced_segments(broker)
        assert stored_segments(faulty) == referenced  # nothing early, nothing left behind
    # Only the still-open ledger remains, and its entries were in the last segment.
    (remaining,) = ledger.segments()
    assert [lid for lid, _, _ in remaining.ledgers] == [ledger.ledgers()[0].ledger_id]
    assert stored_segments(faulty) == {remaining.uuid}


def test_switching_completes_the_segment_and_both_formats_stay_readable(
    make_broker: Any, faulty: FaultyStorePlugin
) -> None:
    broker = make_broker(**STREAMING, managedLedgerOffloadDeletionLagMs=0)
    produce(broker, 150)
    ledger = broker.topic(TOPIC)
    assert [s.status for s in ledger.segments()] == ["assigned"]
    broker.policies.update("topic", TOPIC, streaming_enabled=False)
    ledger.pump_streaming()
    assert broker.drain(30)  # a pump the upload asked for may be the one that completes it
    assert [s.status for s in ledger.segments()] == ["complete"]
    produce(broker, 160, start=150)
    status = ledger.offload_prefix()  # PIP-17 again: whole sealed ledgers
    assert status.status == "success"
    states = ledger.ledgers()
    assert [s.tier for s in states] == ["offloaded"] * 3 + ["hot"]  # the deletion lag is 0
    # The first ledger was streamed whole; the second, streamed in part when
    # streaming went off, and the third were offloaded whole (PIP-17).
    assert [s.uuid is not None for s in states[:3]] == [False, True, True]
    entries = read_everything(broker)
    assert [e.entry.data for e in entries] == [payload(n) for n in range(310)]
    assert [e.tier for e in entries[:300]] == ["offloaded"] * 300
    # The segment that holds part of the second ledger stays recorded with it too.
    (segment,) = ledger.segments()
    assert [lid for lid, _, _ in segment.ledgers] == [s.ledger_id for s in states[:2]]
    assert stored_segments(faulty) == {segment.uuid}


def test_enabling_streaming_backfills_sealed_ledgers_oldest_first(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(managedLedgerOffloadDriver="faulty")
    produce(broker, 350)
    ledger = broker.topic(TOPIC)
    assert ledger.segments() == []
    broker.policies.update("topic", TOPIC, streaming_enabled=True)
    ledger.complete_current_segment()
    (segment,) = ledger.segments()
    ids = [s.ledger_id for s in ledger.ledgers()]
    assert [lid for lid, _, _ in segment.ledgers] == ids
    assert [s.tier for s in ledger.ledgers()] == ["hot+offloaded"] * 3 + ["hot"]


def test_reopening_cleans_an_assigned_segment_and_resumes_after_the_last_complete(
    make_broker: Any, faulty: FaultyStorePlugin
) -> None:
    broker = make_broker(**STREAMING)
    produce(broker, 120)
    ledger = broker.topic(TOPIC)
    ledger.complete_current_segment()
    produce(broker, 50, start=120)
    ledger.pump_streaming()  # what maintenance does every so often for a quiet topic
    assert [s.status for s in ledger.segments()] == ["complete", "assigned"]
    # What a crash leaves: the open segment assigned in metadata, its upload never finished.
    assert ledger._segment is not None
    ledger._segment.abort()
    ledger._segment = None
    ledger._segment_uid = None
    broker.close()
    broker = make_broker(**STREAMING)
    ledger = broker.topic(TOPIC)
    assert [s.status for s in ledger.segments()] == ["complete"]
    ledger.complete_current_segment()
    segments = ledger.segments()
    assert [s.status for s in segments] == ["complete", "complete"]
    second_ledger = ledger.ledgers()[1].ledger_id
    assert segments[1].ledgers == ((second_ledger, 20, 69),)  # resumed right after the complete segment
    assert stored_segments(faulty) == {s.uuid for s in segments}
    entries = read_everything(broker)
    assert [e.entry.data for e in entries] == [payload(n) for n in range(170)]


def test_switching_off_after_a_failed_upload_forgets_the_failed_segment(
    make_broker: Any, faulty: FaultyStorePlugin
) -> None:
    broker = make_broker(**STREAMING)
    produce(broker, 150)
    ledger = broker.topic(TOPIC)
    faulty.faults.append(Fault("part", permanent=True, times=None))  # every retry fails too
    assert ledger.complete_current_segment().status == "error"
    assert [s.status for s in ledger.segments()] == ["failed"]
    broker.policies.update("topic", TOPIC, streaming_enabled=False)
    ledger.pump_streaming()
    assert broker.drain(30)
    assert ledger.segments() == [] and stored_segments(faulty) == set()
    faulty.faults.clear()
    assert ledger.offload_prefix().status == "success"  # the sealed ledger goes whole (PIP-17)
    assert [s.tier for s in ledger.ledgers()][:1] == ["hot+offloaded"]
