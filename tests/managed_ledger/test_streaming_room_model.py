"""Streaming through a store that stops taking parts and starts again,
against a model: for any interleaving of appends (ledgers rolling over
by count), the store holding its parts back, letting them go, and
segments completed on request, the stream never stalls (once parts flow,
every entry appended is offered without another append) and every entry
reads back once, in order, from the segments. The interleaving of a part
leaving the buffer with an offer refused for a full one is where room
notices were lost."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from offload_core import PluginManager
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.model import Position
from tests.managed_ledger.conftest import Clock, GatedStore
from tests.offload.test_streaming_offload import wait_for

TOPIC = "acme/prod/room"
CONFIG = {
    "managedLedgerMaxEntriesPerLedger": 50,
    "managedLedgerOffloadMaxBlockSizeInBytes": 4096,
    "managedLedgerOffloadDriver": "gated",
    "managedLedgerOffloadStreamingEnabled": True,
    "managedLedgerOffloadStreamingBufferSizeInBytes": 2 * 4096,
    "managedLedgerOffloadDeletionLagMs": 3_600_000,  # hot copies stay: reads below go to the segments
    "managedLedgerFsyncPolicy": "none",
    "retentionCheckIntervalInSeconds": 0,
}


class RoomModel(RuleBasedStateMachine):
    compared = [0]  # entry reads compared, over every run (the reliability campaign reports it)

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="room-model-"))
        self.gated = GatedStore()
        plugins = PluginManager()
        plugins.register(self.gated)
        self.broker = Broker(self.dir / "data", parse_config(CONFIG), plugin_manager=plugins, clock=Clock())
        self.ledger = self.broker.topic(TOPIC)
        self.entries: list[bytes] = []
        self.last: Position | None = None

    def teardown(self) -> None:
        self.gated.parts.set()
        self.broker.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @rule(count=st.integers(1, 30), size=st.integers(0, 3000))
    def append(self, count: int, size: int) -> None:
        for _ in range(count):
            payload = (f"{len(self.entries)}:".encode() * (size // 2 + 1))[:size]
            self.last = self.ledger.append(payload)
            self.entries.append(payload)

    @rule()
    def store_holds_parts_back(self) -> None:
        self.gated.parts.clear()

    @rule()
    def parts_flow_again(self) -> None:
        self.gated.parts.set()
        assert self.broker.drain(60)  # the pumps asked for so far; room notices start the rest
        last = self.last
        if last is not None:
            wait_for(lambda: self.ledger._stream_next > last, timeout=30)

    @rule()
    def complete_the_segment(self) -> None:
        self.gated.parts.set()
        assert self.ledger.complete_current_segment().status == "success"

    @invariant()
    def the_buffer_stays_within_its_bound(self) -> None:
        segment = self.ledger._segment
        if segment is not None:
            assert segment.peak_buffered_bytes <= 2 * 4096

    @rule()
    def everything_streamed_reads_back(self) -> None:
        self.complete_the_segment()
        if not self.entries:
            return
        served = self.ledger.read(Position(self.ledger.ledgers()[0].ledger_id, 0), 10**6,
                                  priority=ReadPriority.OFFLOADED_FIRST)  # fmt: skip
        assert [e.data for e in served] == self.entries
        RoomModel.compared[0] += len(served)
        at = 0
        for state in self.ledger.ledgers():  # the segments themselves, with no fallback to the hot copies
            if "offloaded" in state.tier:
                from_segments = self.ledger.read_tiered(Position(state.ledger_id, 0), state.entries,
                                                        priority=ReadPriority.OFFLOADED_ONLY)  # fmt: skip
                assert [e.entry.data for e in from_segments] == self.entries[at : at + state.entries]
                RoomModel.compared[0] += len(from_segments)
            at += state.entries


def test_streaming_never_stalls_on_room_and_keeps_every_entry_once() -> None:
    run_state_machine_as_test(
        RoomModel,
        settings=settings(
            max_examples=25,
            stateful_step_count=15,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
