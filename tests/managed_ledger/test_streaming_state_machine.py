"""Streaming offload against a model: for any interleaving of appends,
ledger rollovers, segment rollovers by size and time, manual offloads,
injected upload failures, restarts (clean, or with the open segment lost as
in a crash) and trims, every entry appended and not trimmed reads back
exactly once, in order, under every priority that can serve it, and the
store holds exactly the segments the metadata names."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from offload_core import PluginManager
from offload_core.formats import pulsar_v2 as v2
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.model import Position
from offload_core.testing.faults import Fault
from tests.managed_ledger.conftest import Clock, FaultyStorePlugin

TOPIC = "acme/prod/model"
CONFIG = {
    "managedLedgerMaxEntriesPerLedger": 15,
    "managedLedgerMaxLedgerRolloverTimeMinutes": 5,
    "managedLedgerOffloadMaxBlockSizeInBytes": 16384,
    "managedLedgerOffloadDriver": "faulty",
    "managedLedgerOffloadStreamingEnabled": True,
    "maxSizePerOffloadSegmentMbytes": 1,
    "maxOffloadSegmentRolloverTimeMinutes": 3,
    "managedLedgerOffloadDeletionLagMs": 0,
    "managedLedgerFsyncPolicy": "none",
    "retentionCheckIntervalInSeconds": 0,  # the model drives time; no real-time ticker
}


class StreamingModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="streaming-model-"))
        self.clock = Clock()
        self.faulty = FaultyStorePlugin()
        self.entries: list[bytes] = []  # what is appended and not trimmed, in order
        self.serial = 0
        self.broker = self._open()

    def _open(self) -> Broker:
        plugins = PluginManager()
        plugins.register(self.faulty)
        return Broker(self.dir / "data", parse_config(CONFIG), plugin_manager=plugins, clock=self.clock)

    def teardown(self) -> None:
        self.broker.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def ledger(self):  # type: ignore[no-untyped-def]
        return self.broker.topic(TOPIC)

    @rule(count=st.integers(1, 40), large=st.booleans())
    def append(self, count: int, large: bool) -> None:
        for _ in range(count):
            size = 30_000 + self.serial % 5000 if large else self.serial % 400
            payload = (f"{self.serial}:".encode() * (size // 4 + 1))[:size]
            self.ledger.append(payload)
            self.entries.append(payload)
            self.serial += 1
        assert self.broker.drain(60)

    @rule()
    def ledger_rollover_by_age(self) -> None:
        self.clock.advance(5 * 60 + 1)
        self.ledger.roll_over_if_due()
        assert self.broker.drain(60)

    @rule()
    def segment_rollover_by_age(self) -> None:
        self.clock.advance(3 * 60 + 1)
        self.ledger.pump_streaming()
        assert self.broker.drain(60)

    @rule()
    def manual_offload(self) -> None:
        self.ledger.offload_prefix()
        assert self.broker.drain(60)

    @rule()
    def upload_fails_once(self) -> None:
        self.faulty.faults.append(Fault("part", permanent=True, times=1))

    @rule(crash=st.booleans())
    def restart(self, crash: bool) -> None:
        ledger = self.ledger
        if crash and ledger._segment is not None:
            # What a crash leaves behind: the open segment assigned, never finished.
            ledger._segment.abort()
            ledger._segment = ledger._segment_uid = None
        self.faulty.faults.clear()
        self.broker.close()
        self.broker = self._open()

    @rule()
    def trim_everything_sealed(self) -> None:
        ledger = self.ledger
        sealed = [s for s in ledger.ledgers() if s.sealed]
        self.broker.policies.update("topic", TOPIC, retention_time_minutes=0)
        try:
            trimmed = ledger.trim()
        finally:
            self.broker.policies.update("topic", TOPIC, retention_time_minutes=None)
        assert trimmed == [s.ledger_id for s in sealed]
        del self.entries[: sum(s.entries for s in sealed)]

    @invariant()
    def every_entry_reads_back_once_in_order(self) -> None:
        ledger = self.ledger
        states = ledger.ledgers()
        if not states:
            assert self.entries == []
            return
        first = Position(states[0].ledger_id, 0)
        for priority in (ReadPriority.OFFLOADED_FIRST, ReadPriority.BOOKKEEPER_FIRST):
            assert [e.data for e in ledger.read(first, 10**6, priority=priority)] == self.entries
        at = 0
        for state in states:
            if "offloaded" in state.tier:
                served = ledger.read_tiered(Position(state.ledger_id, 0), state.entries,
                                            priority=ReadPriority.OFFLOADED_ONLY)  # fmt: skip
                assert [e.entry.data for e in served] == self.entries[at : at + state.entries]
                assert {e.tier for e in served} == {"offloaded"}
            at += state.entries

    @invariant()
    def the_store_holds_exactly_the_complete_segments(self) -> None:
        stored = {p.uuid for info in self.faulty.store.list() if (p := v2.parse_segment_key(info.key)) is not None}
        complete = {s.uuid for s in self.ledger.segments() if s.status == "complete"}
        assert stored == complete


def test_streaming_offload_keeps_every_entry_exactly_once() -> None:
    run_state_machine_as_test(
        StreamingModel,
        settings=settings(
            max_examples=40,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
