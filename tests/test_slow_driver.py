"""SlowDriver: object-store latency and bandwidth on any driver, waits
that overlap across threads, and faults on top. No test asserts on time:
the waits are observed through the injected sleep."""

from __future__ import annotations

import threading

import pytest

from offload_core.errors import ConfigError, TransientStorageError
from offload_core.memory import MemoryDriver
from offload_core.storage import StorageDriver
from offload_core.testing import DriverContract
from offload_core.testing.faults import Fault, FaultyDriver, Latency, SlowDriver


class Recorder:
    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_each_request_waits_its_latency_then_its_bytes_at_the_bandwidth() -> None:
    recorder = Recorder()
    memory = MemoryDriver()
    slow = SlowDriver(memory, Latency(0.1), bandwidth=1000.0, sleep=recorder)
    slow.write("k", iter([b"a" * 500, b"b" * 250]))  # two parts: two requests
    assert slow.read("k", 0, 600) == memory.read("k", 0, 600)
    slow.stat("k")
    list(slow.list(""))
    slow.delete(["k"])
    # Each part: latency, then transfer; the read: latency, then 600 bytes; then three requests.
    assert recorder.waits == pytest.approx([0.1, 0.5, 0.1, 0.25, 0.1, 0.6, 0.1, 0.1, 0.1])


def test_jitter_is_drawn_from_a_seeded_generator() -> None:
    first, second = Recorder(), Recorder()
    for recorder in (first, second):
        slow = SlowDriver(MemoryDriver(), Latency(0.05, jitter=0.15, seed=3), sleep=recorder)
        for _ in range(50):
            slow.exists("nothing")
    assert first.waits == second.waits  # the same seed, the same run
    assert all(0.05 <= wait <= 0.2 for wait in first.waits)
    assert len(set(first.waits)) > 40  # drawn, not fixed


def test_requests_running_at_once_wait_at_once() -> None:
    # Each wait blocks until two requests are waiting together: if the
    # wrapper serialised its waits, the barrier would break instead.
    barrier = threading.Barrier(2)
    memory = MemoryDriver()
    memory.write("k", b"x" * 100)
    slow = SlowDriver(memory, Latency(0.1), sleep=lambda _seconds: barrier.wait(timeout=10))
    results: list[bytes] = []
    threads = [threading.Thread(target=lambda: results.append(slow.read("k"))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [b"x" * 100] * 2 and not barrier.broken


def test_faults_and_latency_compose() -> None:
    recorder = Recorder()
    memory = MemoryDriver()
    memory.write("k", b"data")
    slow = SlowDriver(FaultyDriver(memory, [Fault("read", times=1)]), Latency(0.2), sleep=recorder)
    with pytest.raises(TransientStorageError):
        slow.read("k")
    assert slow.read("k") == b"data"
    assert recorder.waits == pytest.approx([0.2, 0.2])  # the failed request cost its round trip too


def test_impossible_settings_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="must not be negative"):
        SlowDriver(MemoryDriver(), -0.1)
    with pytest.raises(ConfigError, match="must not be negative"):
        Latency(0.1, jitter=-1)
    with pytest.raises(ConfigError, match="bandwidth must be positive"):
        SlowDriver(MemoryDriver(), 0.1, bandwidth=0.0)


class TestSlowDriverKeepsTheContract(DriverContract):
    """Wrapped, a driver is still a whole driver (the waits are recorded, not slept)."""

    @pytest.fixture
    def driver(self) -> StorageDriver:
        return SlowDriver(MemoryDriver(), Latency(0.1), bandwidth=1e6, sleep=Recorder())
