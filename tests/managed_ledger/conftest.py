"""A broker in a temporary directory, a settable clock, and a fault-injecting store."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offload_core import Event, PluginManager, hookimpl
from offload_core.managed_ledger import Broker, parse_config
from offload_core.memory import MemoryDriver
from offload_core.model import ObjectInfo
from offload_core.storage import BytesLike
from offload_core.testing.faults import Fault, FaultyDriver


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class FaultyStorePlugin:
    """Registers driver ``faulty``: every instance shares one memory store
    and one list of faults the test can change."""

    def __init__(self) -> None:
        self.store = MemoryDriver()
        self.faults: list[Fault] = []
        self.events: list[Event] = []

    @hookimpl
    def offload_core_register_drivers(self, register: Any) -> None:
        plugin = self

        class SharedFaulty(FaultyDriver):
            def __init__(self, bucket: str = "default") -> None:
                super().__init__(plugin.store, [])
                self.faults = plugin.faults

        register(SharedFaulty, name="faulty")

    @hookimpl
    def offload_core_on_event(self, event: Event) -> None:
        self.events.append(event)

    def steps(self) -> list[str]:
        return [str(e.fields["step"]) for e in self.events if e.kind == "offload.lifecycle"]


class GatedStore:
    """Registers driver ``gated``: a memory store whose data-object reads
    wait at ``gate`` while it is closed, and whose data-object writes send
    each part only once ``parts`` is open (both open to begin with);
    ``waiting`` is set when either holds a call back."""

    def __init__(self) -> None:
        self.store = MemoryDriver()
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()
        self.parts = threading.Event()
        self.parts.set()

    @hookimpl
    def offload_core_register_drivers(self, register: Any) -> None:
        plugin = self

        class Gated(MemoryDriver):
            def __init__(self, bucket: str = "default") -> None:
                super().__init__()
                self._objects = plugin.store._objects
                self._lock = plugin.store._lock

            def _read(self, key: str, start: int, end: int | None) -> bytes:
                if not key.endswith("-index") and not plugin.gate.is_set():
                    plugin.waiting.set()
                    plugin.gate.wait(30)
                return super()._read(key, start, end)

            def _write(
                self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool
            ) -> ObjectInfo:
                def gated() -> Iterator[BytesLike]:
                    for part in parts:
                        if not key.endswith("-index") and not plugin.parts.is_set():
                            plugin.waiting.set()
                            plugin.parts.wait(30)
                        yield part

                return super()._write(key, gated(), metadata, if_absent)

        register(Gated, name="gated")


class EventLog:
    """A plugin that keeps every event a broker emits."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    @hookimpl
    def offload_core_on_event(self, event: Event) -> None:
        self.events.append(event)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def faulty() -> FaultyStorePlugin:
    return FaultyStorePlugin()


@pytest.fixture
def make_broker(tmp_path: Path, clock: Clock, faulty: FaultyStorePlugin) -> Iterator[Any]:
    brokers: list[Broker] = []

    def make(**config: Any) -> Broker:
        # No real-time maintenance ticker: these tests drive time with their own clock.
        values = {"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerOffloadMaxBlockSizeInBytes": 4096,
                  "retentionCheckIntervalInSeconds": 0, **config}  # fmt: skip
        plugins = PluginManager()
        plugins.register(faulty)
        broker = Broker(tmp_path / "data", parse_config(values), plugin_manager=plugins, clock=clock)
        brokers.append(broker)
        return broker

    yield make
    for broker in brokers:
        broker.close()
