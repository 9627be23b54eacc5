"""Stateful models under fault injection: the managed ledger against a list,
and every built-in driver against a dict, for many random runs.

The managed-ledger model interleaves appends, rollovers, offloads whose
storage requests fail (transiently or for good, at any write, part or
delete), hot-copy deletion, reads under every priority, and closing and
reopening the broker. After every step every acknowledged entry must read
back exactly, in order, and the store must hold only objects the metadata
names (an offload that failed has cleaned up or left a recorded ticket).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from offload_driver_filesystem import FilesystemDriver

from offload_core import PluginManager
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.memory import MemoryDriver
from offload_core.model import Position
from offload_core.testing.faults import Fault
from offload_core.testing.state_machine import DriverStateMachine
from tests.managed_ledger.conftest import Clock, FaultyStorePlugin
from tests.reliability.campaign import record, scaled

TOPIC = "rel/model/topic"
FAULTS = st.sampled_from(["write", "write", "part", "complete", "delete", "delete", "read", "stat"])


class ManagedLedgerModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ml-model-"))
        self.clock = Clock()
        self.faulty = FaultyStorePlugin()
        self.entries: list[bytes] = []
        self.checked = 0
        self.broker = self._open()

    def _open(self) -> Broker:
        plugins = PluginManager(load_entry_points=False)
        plugins.register(self.faulty)
        config = parse_config({
            "managedLedgerMaxEntriesPerLedger": 7,
            "managedLedgerOffloadMaxBlockSizeInBytes": 512,
            "managedLedgerOffloadDeletionLagMs": 60_000,
            "managedLedgerOffloadDriver": "faulty",
            "managedLedgerFsyncPolicy": "none",
            "retentionCheckIntervalInSeconds": 0,  # the model drives time; no real-time ticker
        })  # fmt: skip
        return Broker(self.directory, config, plugin_manager=plugins, clock=self.clock)

    @rule(size=st.integers(0, 120), count=st.integers(1, 9))
    def append(self, size: int, count: int) -> None:
        topic = self.broker.topic(TOPIC)
        for _ in range(count):
            payload = bytes([len(self.entries) % 251]) * size
            topic.append(payload)
            self.entries.append(payload)

    @rule()
    def roll_over(self) -> None:
        self.clock.advance(241 * 60)
        self.broker.topic(TOPIC).roll_over_if_due()

    @rule(faults=st.lists(st.builds(Fault, FAULTS, nth=st.integers(1, 3), permanent=st.booleans(),
                                    times=st.sampled_from([1, 3, None])), max_size=3))  # fmt: skip
    def offload(self, faults: list[Fault]) -> None:
        """Offload whatever is sealed while the store fails as ``faults`` say
        (none: a clean run that must complete what earlier runs left)."""
        self.faulty.faults[:] = faults
        try:
            self.broker.topic(TOPIC).offload_prefix()
        finally:
            self.faulty.faults.clear()

    @rule()
    def delete_hot_copies(self) -> None:
        self.clock.advance(61)
        self.broker.topic(TOPIC).delete_hot_copies_past_lag()

    @rule()
    def reopen(self) -> None:
        self.broker.close()
        self.broker = self._open()

    @rule()
    def maintenance(self) -> None:
        self.broker.topic(TOPIC).run_maintenance()

    @precondition(lambda self: bool(self.entries))
    @invariant()
    def every_entry_reads_back_in_order(self) -> None:
        topic = self.broker.topic(TOPIC)
        first = Position(topic.ledgers()[0].ledger_id, 0)
        for priority in (ReadPriority.OFFLOADED_FIRST, ReadPriority.BOOKKEEPER_FIRST):
            read = [entry.data for entry in topic.read(first, len(self.entries) + 5, priority=priority)]
            assert read == self.entries, f"{priority.name}: {len(read)} entries back of {len(self.entries)}"
            self.checked += len(read)

    @invariant()
    def the_store_holds_only_what_the_metadata_names(self) -> None:
        topic = self.broker.topic(TOPIC)
        named = {state.uuid for state in topic.ledgers() if state.uuid}
        for info in self.faulty.store.list(""):
            parsed = v1.parse_key(info.key)
            assert parsed is not None and parsed.uuid in named, f"object {info.key} is named by no metadata"

    def teardown(self) -> None:
        ManagedLedgerModel.totals[0] += 1
        ManagedLedgerModel.totals[1] += self.checked
        self.broker.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    totals = [0, 0]


def test_the_managed_ledger_keeps_every_entry_under_faults() -> None:
    ManagedLedgerModel.totals[:] = [0, 0]
    examples = scaled("ledger_model_examples")
    run_state_machine_as_test(
        ManagedLedgerModel,
        settings=settings(max_examples=examples, stateful_step_count=25, deadline=None, derandomize=examples < 100,
                          suppress_health_check=list(HealthCheck)),
    )  # fmt: skip
    runs, checked = ManagedLedgerModel.totals
    record("managed-ledger model: appends, rollovers, offloads with injected faults, hot deletion, reopen",
           runs=runs, checked=checked, losses=0, unit="entry reads compared")  # fmt: skip


@pytest.mark.parametrize("name", ["memory", "filesystem"])
def test_drivers_behave_like_a_dict(name: str, tmp_path: Path) -> None:
    examples = scaled("driver_model_examples")
    driver = MemoryDriver() if name == "memory" else FilesystemDriver(str(tmp_path / "bucket"))
    machine = type("Machine", (DriverStateMachine,), {"driver": driver, "check_conditional_create": True})
    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=examples, stateful_step_count=20, deadline=None, derandomize=examples < 100,
                          suppress_health_check=list(HealthCheck)),
    )  # fmt: skip
    record(f"{name} driver model (write, read, stat, list, delete, failing part iterators) against a dict",
           runs=examples, checked=examples, losses=0,
           unit="runs of up to 20 operations, each result compared")  # fmt: skip
