"""Streaming segments written by a worker process: the broker's pump only
locates each batch in the hot tier; the worker reads, frames and uploads
it. Same objects and metadata as in-process, events carried back; a worker
killed mid-segment fails that segment only, which is retried from the hot
tier without losing, duplicating or leaving behind anything."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from offload_core.formats import pulsar_v2 as v2
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.managed_ledger.lifecycle.offload_workers import WORKER_NICENESS
from offload_core.managed_ledger.streaming.segment_worker_link import WorkerDied, WorkerLink
from offload_core.managed_ledger.streaming.segment_worker_process import _Served
from offload_core.managed_ledger.workers.worker_processes import WorkerLauncher
from offload_core.model import Position
from offload_core.offload import OfferResult
from offload_core.plugins import open_driver
from tests.managed_ledger.conftest import EventLog

TOPIC = "acme/prod/segment-workers"
CONFIG = {"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerOffloadMaxBlockSizeInBytes": 4096,
          "managedLedgerFsyncPolicy": "none", "managedLedgerOffloadStreamingEnabled": True,
          "maxSizePerOffloadSegmentMbytes": 1}  # fmt: skip


def payload(n: int) -> bytes:
    return f"entry {n} ".encode() * 30


def every_object_is_named_by_metadata(data_dir: Path, uuids: set[str]) -> None:
    bucket = open_driver(f"file://{data_dir / 'bucket'}")
    keys = {info.key for info in bucket.list("")}
    expected = {key(uuid) for uuid in uuids for key in
                (v2.segment_data_key, v2.segment_index_key)}  # fmt: skip
    assert keys == expected


def test_the_worker_streams_the_segments_and_its_events_come_back(tmp_path: Path) -> None:
    with Broker(tmp_path / "data", parse_config(CONFIG)) as broker:  # plugins from entry points: workers on
        workers = broker.segment_workers
        assert workers is not None
        listener = EventLog()
        broker.plugins.register(listener)
        ledger = broker.topic(TOPIC)
        for n in range(250):
            ledger.append(payload(n))
        broker.drain()
        assert ledger.complete_current_segment().status == "success"
        assert workers.process_id not in (None, os.getpid())
        # Background work: the worker runs at a lower priority than the broker's producers.
        assert os.getpriority(os.PRIO_PROCESS, workers.process_id) == min(19, os.getpriority(os.PRIO_PROCESS, 0)
                                                                          + WORKER_NICENESS)  # fmt: skip
        finished = [e for e in listener.events if e.kind == "offload.finished" and e.fields.get("streaming")]
        assert finished, "the worker's events never reached the broker"
        segments = ledger.segments()
        assert {s.status for s in segments} == {"complete"}
        ranges = [r for s in segments for r in s.ledgers]
        assert sum(last - first + 1 for _, first, last in ranges) == 250
        first_ledger = ledger.ledgers()[0].ledger_id
        entries = ledger.read(Position(first_ledger, 0), 200, priority=ReadPriority.OFFLOADED_ONLY)  # the sealed two
        assert [e.data for e in entries] == [payload(n) for n in range(200)]
        # The index describes the sealed ledgers as closed: the worker asked the broker.
        offloader, _ = broker.offloaders.for_policies(ledger.policies())
        segment = offloader.open_segment(segments[0].uuid)  # type: ignore[attr-defined]
        section = next(s for s in segment.index.ledgers if s.ledger_id == first_ledger)
        assert section.ledger_info == v2.ledger_info_bytes(
            first_ledger, last_entry_id=99, closed=True, entries=100, size=sum(len(payload(n)) for n in range(100)),
            timestamp_ms=int(ledger._ledgers_by_id[first_ledger].timestamp),
        )  # fmt: skip
    every_object_is_named_by_metadata(tmp_path / "data", {s.uuid for s in segments})


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_worker_killed_mid_segment_fails_it_and_it_is_retried(tmp_path: Path) -> None:
    with Broker(tmp_path / "data", parse_config(CONFIG)) as broker:
        workers = broker.segment_workers
        assert workers is not None
        listener = EventLog()
        broker.plugins.register(listener)
        ledger = broker.topic(TOPIC)
        for n in range(150):
            ledger.append(payload(n))
        broker.drain()
        ledger.pump_streaming()
        broker.drain()
        assert [s.status for s in ledger.segments()] == ["assigned"]  # open in the worker, holding 150 entries
        killed = workers.process_id
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while workers.process_id == killed:  # noticed, and maybe a fresh worker started already
            assert time.monotonic() < deadline, "the broker never noticed the worker died"
            time.sleep(0.01)
        for n in range(150, 300):
            ledger.append(payload(n))
        for _ in range(3):
            if ledger.complete_current_segment().status == "success":
                break
        else:
            raise AssertionError("the failed segment was never completed")
        failed = [e for e in listener.events if e.kind == "offload.segment" and e.fields["step"] == "failed"]
        assert failed and all("died" in str(e.fields["error"]) for e in failed)
        assert workers.process_id not in (None, killed)
        segments = ledger.segments()
        assert {s.status for s in segments} == {"complete"}
        first_ledger = ledger.ledgers()[0].ledger_id
        entries = ledger.read(Position(first_ledger, 0), 200, priority=ReadPriority.OFFLOADED_ONLY)
        assert [e.data for e in entries] == [payload(n) for n in range(200)]
    every_object_is_named_by_metadata(tmp_path / "data", {s.uuid for s in segments})


def test_a_segment_in_the_worker_closes_at_its_age_on_the_brokers_clock(tmp_path: Path) -> None:
    now = [1000.0]
    config = parse_config({**CONFIG, "maxOffloadSegmentRolloverTimeMinutes": 1, "retentionCheckIntervalInSeconds": 0})
    with Broker(tmp_path / "data", config, clock=lambda: now[0]) as broker:
        ledger = broker.topic(TOPIC)
        for n in range(50):
            ledger.append(payload(n))
        broker.drain()
        ledger.pump_streaming()
        assert broker.drain(30)
        assert [s.status for s in ledger.segments()] == ["assigned"]
        now[0] += 59
        ledger.pump_streaming()
        assert broker.drain(30)
        assert [s.status for s in ledger.segments()] == ["assigned"]  # not due yet
        now[0] += 2
        ledger.append(payload(50))
        ledger.pump_streaming()
        assert broker.drain(30)
        statuses = [(s.status, s.ledgers) for s in ledger.segments()]
        first_ledger = ledger.ledgers()[0].ledger_id
        assert statuses[0] == ("complete", ((first_ledger, 0, 49),))  # closed at its age, before entry 50
        assert statuses[1][0] == "assigned" and statuses[1][1][0][1] == 50  # the next one holds what followed


class RefusingHandle:
    """Stands in for the worker's OffloadHandle to inject a full buffer (and
    a part leaving it while the offer runs)."""

    def __init__(self, served: Any, part_leaves_during_offer: bool) -> None:
        self.served = served
        self.part_leaves_during_offer = part_leaves_during_offer

    def offer_run(self, ledger_id: int, first: int, payloads: Any) -> tuple[int, OfferResult]:
        if self.part_leaves_during_offer:
            self.served.part_sent()
        return 0, OfferResult.FAIL_BUFFER_FULL


class NoRecords:
    ledger_id, first, last = 1, 0, 0

    @staticmethod
    def read_payloads() -> list[bytes]:
        return [b"x"]


@pytest.mark.parametrize("during", [False, True], ids=["after the refusal", "during the offer"])
def test_the_broker_hears_of_room_once_after_a_refusal_and_never_misses_it(during: bool) -> None:
    notices: list[int] = []
    served = _Served(0.0, lambda: notices.append(1))
    served.part_sent()
    assert notices == []  # nobody waits: parts leave silently
    served.handle = RefusingHandle(served, part_leaves_during_offer=during)  # type: ignore[assignment]
    assert served.offer(NoRecords) == (0, OfferResult.FAIL_BUFFER_FULL)  # type: ignore[arg-type]
    if during:
        assert notices == [1]  # the part that left while the offer ran made room: said at once
    else:
        assert notices == []
        served.part_sent()
        assert notices == [1]
    served.part_sent()
    assert notices == [1]  # once per refusal


def test_workers_can_be_started_before_their_first_use(tmp_path: Path) -> None:
    with Broker(tmp_path / "data", parse_config(CONFIG)) as broker:
        assert broker.segment_workers is not None and broker.offload_workers is not None
        assert broker.segment_workers.process_id is None  # started on first use by default
        broker.start_workers()
        started = broker.segment_workers.process_id
        assert started not in (None, os.getpid())
        assert len(broker.offload_workers.process_ids) == 1
        ledger = broker.topic(TOPIC)
        for n in range(120):
            ledger.append(payload(n))
        assert ledger.complete_current_segment().status == "success"
        assert broker.segment_workers.process_id == started  # the segment went to the worker already running


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_call_to_a_dead_worker_fails_as_its_death_before_the_link_has_seen_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Fault injection: the link's receiving thread runs only once the test
    # lets it, as on a loaded machine where it has not run since the worker
    # died: a call then meets the broken pipe before the link is known dead.
    receiving = threading.Event()
    receive = WorkerLink._receive

    def late(link: WorkerLink) -> None:
        receiving.wait()
        receive(link)

    monkeypatch.setattr(WorkerLink, "_receive", late)
    link = WorkerLink(lambda event: None, WorkerLauncher())
    try:
        os.kill(link.pid, signal.SIGKILL)
        assert "signal" in link._process.ended()
        with pytest.raises(WorkerDied, match="the segment worker process died"):
            link.call(None, "ping")
        assert not link._pending
    finally:
        receiving.set()
        link.close()
    assert link.dead
