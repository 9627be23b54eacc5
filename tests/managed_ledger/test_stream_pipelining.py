"""Pipelined offers: a producer hands its entries to the segment worker
itself, without a pump and without waiting for an answer; an offer the
worker cannot take whole stalls the segment until the pump resyncs.
Nothing is lost, duplicated or left behind, whatever stops in between."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from offload_core.formats.segment_blocks import BlockGrouper
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.managed_ledger.streaming.segment_worker_process import _Served
from offload_core.managed_ledger.streaming.segment_workers import RemoteSegment
from offload_core.managed_ledger.streaming.streaming_lifecycle import StreamingLifecycle
from offload_core.model import Position
from offload_core.offload import OfferResult
from tests.managed_ledger.test_segment_workers import (
    CONFIG,
    TOPIC,
    NoRecords,
    RefusingHandle,
    every_object_is_named_by_metadata,
)
from tests.offload.test_streaming_offload import wait_for


def kb(n: int) -> bytes:
    """Entry ``n`` of these tests: 1000 bytes saying which it is."""
    return n.to_bytes(8, "big") * 125


class Numbered:
    """Appends entries ``kb(0)``, ``kb(1)`` ... to a topic."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger
        self.count = 0

    def append(self, times: int = 1) -> None:
        for _ in range(times):
            self.ledger.append(kb(self.count))
            self.count += 1


STEADY = {**CONFIG, "managedLedgerMaxEntriesPerLedger": 1500, "managedLedgerOffloadMaxBlockSizeInBytes": 64 << 10,
          "maxSizePerOffloadSegmentMbytes": 64}  # fmt: skip


class Counted:
    """Counts the pumps that ran, the synchronous offers they made and
    their resyncs after pipelined offers."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pumps = self.offers = self.syncs = 0
        pump, offer, sync = StreamingLifecycle.pump_streaming, RemoteSegment.offer_records, RemoteSegment.sync

        def counted_pump(ledger: Any) -> int:
            self.pumps += 1
            return pump(ledger)

        def counted_offer(segment: Any, records: Any) -> Any:
            self.offers += 1
            return offer(segment, records)

        def counted_sync(segment: Any) -> Any:
            self.syncs += 1
            return sync(segment)

        monkeypatch.setattr(StreamingLifecycle, "pump_streaming", counted_pump)
        monkeypatch.setattr(RemoteSegment, "sync", counted_sync)
        monkeypatch.setattr(RemoteSegment, "offer_records", counted_offer)


def segment_open_in_the_worker(broker: Broker) -> tuple[Any, Numbered]:
    """The workers started, and the topic's segment open in the worker
    holding entry 0 (opening it is a pump's job); the topic, and what
    appends its next entries."""
    broker.start_workers()
    ledger = broker.topic(TOPIC)
    produce = Numbered(ledger)
    produce.append()
    ledger.pump_streaming()
    assert broker.drain(30)
    return ledger, produce


def streamed_exactly_once(ledger: Any, count: int) -> None:
    """Every one of ``count`` entries is in exactly one complete segment,
    in order, and the sealed ones read back as written."""
    segments = ledger.segments()
    assert {s.status for s in segments} == {"complete"}
    ranges = sorted(r for s in segments for r in s.ledgers)
    assert sum(last - first + 1 for _, first, last in ranges) == count
    for (ledger_id, _, last), (next_id, next_first, _) in itertools.pairwise(ranges):
        assert next_first == (last + 1 if next_id == ledger_id else 0)
    first_ledger = ledger.ledgers()[0].ledger_id
    sealed = sum(info.entries for info in ledger.ledgers() if info.sealed)
    entries = ledger.read(Position(first_ledger, 0), sealed, priority=ReadPriority.OFFLOADED_ONLY)
    assert [e.data for e in entries] == [kb(n) for n in range(sealed)]


def test_appends_hand_their_entries_to_the_worker_without_a_pump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Broker(tmp_path / "data", parse_config(STEADY)) as broker:
        ledger, produce = segment_open_in_the_worker(broker)
        counted = Counted(monkeypatch)
        produce.append(4499)  # three ledgers, two seals, a new ledger created in the open segment
        assert broker.drain(30)
        assert (counted.pumps, counted.offers, counted.syncs) == (0, 0, 0)  # the appends handed everything over
        segments = ledger.segments()
        assert len(segments) == 1 and [r[0] for r in segments[0].ledgers] == [i.ledger_id for i in ledger.ledgers()]
        assert ledger.complete_current_segment().status == "success"
        streamed_exactly_once(ledger, 4500)
    every_object_is_named_by_metadata(tmp_path / "data", {s.uuid for s in segments})


@pytest.mark.parametrize(
    "settings",
    [{"maxSizePerOffloadSegmentMbytes": 1},
     {"managedLedgerOffloadStreamingBufferSizeInBytes": 2 * (64 << 10)}],
    ids=["the segment closes at its size", "the buffer is full"],
)  # fmt: skip
def test_a_pipelined_offer_not_taken_whole_is_taken_up_by_the_pump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: dict[str, int]
) -> None:
    with Broker(tmp_path / "data", parse_config({**STEADY, **settings})) as broker:
        ledger, produce = segment_open_in_the_worker(broker)
        counted = Counted(monkeypatch)
        produce.append(3499)
        assert broker.drain(30)
        for _ in range(100):  # a manual offload closes the segment with what its buffer took so far
            assert ledger.complete_current_segment().status == "success"
            if sum(last - first + 1 for s in ledger.segments() for _, first, last in s.ledgers) == 3500:
                break
        assert counted.pumps and counted.syncs  # the stalled segment went back to the pump, which resynced
        streamed_exactly_once(ledger, 3500)
        if "maxSizePerOffloadSegmentMbytes" in settings:
            assert len(ledger.segments()) >= 3
        uuids = {s.uuid for s in ledger.segments()}
    every_object_is_named_by_metadata(tmp_path / "data", uuids)


def entries_filling_a_segment(config: dict[str, Any]) -> int:
    """How many ``kb`` entries a segment of ``config`` takes before it closes at its size."""
    grouper = BlockGrouper(config["managedLedgerOffloadMaxBlockSizeInBytes"])
    taken, _ = grouper.add_run(0, 0, [kb(0)] * 100_000, stop_at=config["maxSizePerOffloadSegmentMbytes"] << 20)
    return taken


def test_a_segment_a_pipelined_offer_fills_exactly_completes_without_another_append(tmp_path: Path) -> None:
    config = {**STEADY, "maxSizePerOffloadSegmentMbytes": 1}
    full = entries_filling_a_segment(config)
    now = [1000.0]
    with Broker(tmp_path / "data", parse_config(config), clock=lambda: now[0]) as broker:
        ledger, produce = segment_open_in_the_worker(broker)
        produce.append(full - 2)  # under the bytes that send an offer, and no time passes: nothing sent yet
        now[0] += 1.01
        produce.append()  # sends entries 1..full-1: taken whole, and the segment closes at its size
        wait_for(lambda: ledger.segments()[0].status == "complete", timeout=20)  # once the worker's report arrives
        (segment,) = ledger.segments()
        assert [(first, last) for _, first, last in segment.ledgers] == [(0, full - 1)]
        produce.append()  # the next entry goes to a new segment
        assert ledger.complete_current_segment().status == "success"
        streamed_exactly_once(ledger, full + 1)


class CountingHandle(RefusingHandle):
    def __init__(self, served: Any) -> None:
        super().__init__(served, part_leaves_during_offer=False)
        self.offers = 0

    def offer_run(self, ledger_id: int, first: int, payloads: Any) -> tuple[int, OfferResult]:
        self.offers += 1
        return super().offer_run(ledger_id, first, payloads)


def test_after_a_pipelined_offer_is_refused_later_ones_are_dropped_until_the_broker_resyncs() -> None:
    served = _Served(0.0, lambda: None)
    handle = CountingHandle(served)
    served.handle = handle  # type: ignore[assignment]
    assert served.offer_pipelined(NoRecords) == OfferResult.FAIL_BUFFER_FULL.value  # type: ignore[arg-type]
    assert served.offer_pipelined(NoRecords) is None  # type: ignore[arg-type]
    assert handle.offers == 1 and served.stalled  # dropped: it would not follow what the segment took
    served.stalled = False  # what the broker's sync does
    assert served.offer_pipelined(NoRecords) == OfferResult.FAIL_BUFFER_FULL.value  # type: ignore[arg-type]
    assert handle.offers == 2


def test_switching_streaming_off_completes_a_segment_fed_by_the_appends(tmp_path: Path) -> None:
    now = [1000.0]
    with Broker(tmp_path / "data", parse_config(STEADY), clock=lambda: now[0]) as broker:
        ledger, produce = segment_open_in_the_worker(broker)
        produce.append(2047)  # pipelined offers carry these
        broker.policies.update("topic", TOPIC, streaming_enabled=False)
        now[0] += 2  # past the appends' look at the policy
        produce.append(1000)
        assert broker.drain(30)
        (segment,) = ledger.segments()
        assert segment.status == "complete"  # the pump the appends asked for completed it
        assert sum(last - first + 1 for _, first, last in segment.ledgers) < 3048  # later entries stay hot


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")
def test_appends_never_wait_for_a_worker_that_does_not_read(tmp_path: Path) -> None:
    now = [1000.0]
    with Broker(tmp_path / "data", parse_config(STEADY), clock=lambda: now[0]) as broker:
        ledger, produce = segment_open_in_the_worker(broker)
        worker = broker.segment_workers.process_id  # type: ignore[union-attr]
        assert worker is not None
        os.kill(worker, signal.SIGSTOP)
        try:
            appended = []

            def append_a_second_apart() -> None:
                for _ in range(1499):  # a second apart: each append sends an offer, enough to fill the pipe
                    now[0] += 1.01
                    produce.append()
                    appended.append(1)

            producer = threading.Thread(target=append_a_second_apart, daemon=True)
            producer.start()
            producer.join(60)
            assert not producer.is_alive() and len(appended) == 1499, "an append waited for the stopped worker"
        finally:
            os.kill(worker, signal.SIGCONT)
        assert broker.drain(60)
        for _ in range(20):
            assert ledger.complete_current_segment().status == "success"
            if sum(last - first + 1 for s in ledger.segments() for _, first, last in s.ledgers) == 1500:
                break
        streamed_exactly_once(ledger, 1500)


KILLED_WITH_OFFERS_IN_FLIGHT = textwrap.dedent(
    """
    import os, signal, sys
    from offload_core.managed_ledger import Broker, parse_config

    broker = Broker(sys.argv[1], parse_config(eval(sys.argv[2])))  # plugins from entry points: workers on
    broker.start_workers()
    ledger = broker.topic(sys.argv[3])
    ledger.append((0).to_bytes(8, "big") * 125)  # kb(0)
    ledger.pump_streaming()
    broker.drain(60)
    for n in range(1, int(sys.argv[4])):
        ledger.append(n.to_bytes(8, "big") * 125)
    os.kill(os.getpid(), signal.SIGKILL)  # pipelined offers sent, the worker still taking them
    """
)


@pytest.mark.slow
def test_a_broker_killed_with_pipelined_offers_in_flight_loses_and_leaves_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    child = subprocess.run(
        [sys.executable, "-c", KILLED_WITH_OFFERS_IN_FLIGHT, str(data_dir), repr(STEADY), TOPIC, "4000"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr
    with Broker(data_dir, parse_config(STEADY)) as broker:
        ledger = broker.topic(TOPIC)
        appended = sum(state.entries for state in ledger.ledgers())
        assert appended == 4000  # fsync none, but the process died, not the machine
        assert ledger.complete_current_segment().status == "success"
        streamed_exactly_once(ledger, appended)  # every ledger is sealed on reopen
        uuids = {s.uuid for s in ledger.segments()}
    every_object_is_named_by_metadata(data_dir, uuids)
