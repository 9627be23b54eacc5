"""Reads do their I/O outside the ledger's lock, and the handles they share
are never closed under them."""

from __future__ import annotations

import random
import threading
from typing import Any

from offload_core.managed_ledger import ReadPriority
from offload_core.managed_ledger.hot.hot_records import DetachedRecords
from offload_core.model import Position
from tests.managed_ledger.conftest import Clock, GatedStore

TOPIC = "acme/prod/orders"


def test_a_slow_offloaded_read_stops_neither_appends_nor_hot_reads(make_broker: Any) -> None:
    gated = GatedStore()
    broker = make_broker(managedLedgerOffloadDriver="gated", managedLedgerOffloadDeletionLagMs=3_600_000)
    broker.plugins.register(gated)
    topic = broker.topic(TOPIC)
    for n in range(250):
        topic.append(b"entry %d" % n)
    assert topic.offload_prefix().status == "success"
    gated.gate.clear()
    cold: list[Any] = []
    reader = threading.Thread(
        target=lambda: cold.extend(topic.read(Position(1, 0), 10, priority=ReadPriority.OFFLOADED_ONLY))
    )
    reader.start()
    try:
        assert gated.waiting.wait(10), "the offloaded read never reached the store"
        # While it waits on the store: appends, hot reads of the same topic and its state all go on.
        position = topic.append(b"written while a cold read waits")
        assert topic.read(position, 1)[0].data == b"written while a cold read waits"
        assert [e.data for e in topic.read(Position(2, 0), 3, priority="bookkeeper-first")] == [
            b"entry 100", b"entry 101", b"entry 102"
        ]  # fmt: skip
        assert topic.ledgers()[0].tier == "hot+offloaded"
        assert reader.is_alive() and not cold
    finally:
        gated.gate.set()
        reader.join(10)
    assert [e.data for e in cold] == [b"entry %d" % n for n in range(10)]


def test_a_slow_hot_tier_read_does_not_stop_appends(make_broker: Any, monkeypatch: Any) -> None:
    """A hot-tier read (a catching-up consumer, the streaming pump) reads
    the disk outside the ledger's lock: a disk that stalls it stalls no producer."""
    broker = make_broker()
    topic = broker.topic(TOPIC)
    for n in range(50):
        topic.append(b"entry %d" % n)
    gate, waiting = threading.Event(), threading.Event()
    original = DetachedRecords.payloads

    def stalled(records: DetachedRecords) -> list[memoryview]:
        waiting.set()
        gate.wait(30)
        return original(records)

    monkeypatch.setattr(DetachedRecords, "payloads", stalled)
    read: list[Any] = []
    reader = threading.Thread(target=lambda: read.extend(topic.read(Position(1, 0), 20)))
    reader.start()
    try:
        assert waiting.wait(10), "the hot read never reached the disk"
        for n in range(50, 60):
            topic.append(b"entry %d" % n)
        assert topic.ledgers()[0].entries == 60 and reader.is_alive() and not read
    finally:
        gate.set()
        reader.join(10)
    assert [e.data for e in read] == [b"entry %d" % n for n in range(20)]


def test_readers_appends_trims_and_hot_deletions_at_once(make_broker: Any, clock: Clock) -> None:
    broker = make_broker(managedLedgerOffloadThresholdInBytes=0, managedLedgerOffloadDeletionLagMs=0,
                         defaultRetentionTimeInMinutes=1, managedLedgerMaxEntriesPerLedger=20)  # fmt: skip
    topic = broker.topic(TOPIC)
    written: dict[Position, bytes] = {}
    for n in range(100):
        payload = b"seed %d" % n
        written[topic.append(payload)] = payload
    stop = threading.Event()
    problems: list[str] = []
    lock = threading.Lock()

    def appender() -> None:
        n = 0
        while not stop.is_set():
            payload = b"live %d" % n
            position = topic.append(payload)
            with lock:
                written[position] = payload
            n += 1

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            priority = rng.choice(["tiered-storage-first", "bookkeeper-first"])
            states = topic.ledgers()
            if not states:
                continue
            start = Position(rng.choice(states).ledger_id, 0)
            try:
                for entry in topic.read(start, 40, priority=priority):
                    with lock:
                        expected = written.get(Position(entry.ledger_id, entry.entry_id))
                    if expected is not None and entry.data != expected:
                        problems.append(f"wrong entry at {entry.ledger_id}:{entry.entry_id}")
            except Exception as exc:  # noqa: BLE001 - a trimmed ledger is fine, a closed handle is not
                if "trimmed" not in str(exc) and "no ledger" not in str(exc):
                    problems.append(f"{type(exc).__name__}: {exc}")

    def maintainer() -> None:
        while not stop.is_set():
            clock.advance(30)
            topic.run_maintenance()

    threads = [threading.Thread(target=appender), threading.Thread(target=maintainer)]
    threads += [threading.Thread(target=reader, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    threading.Event().wait(3)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert problems == []
    assert topic.read(topic.last_position, 1)[0].data == written[topic.last_position]  # type: ignore[index]


def test_an_append_that_seals_returns_while_the_threshold_offload_is_blocked(make_broker: Any) -> None:
    blocking = GatedStore()  # its data-object writes wait at the parts gate
    broker = make_broker(managedLedgerOffloadDriver="gated", managedLedgerOffloadThresholdInBytes=0)
    broker.plugins.register(blocking)
    topic = broker.topic(TOPIC)
    blocking.parts.clear()
    try:
        for n in range(100):  # the 100th append seals ledger 1: its offload starts in the background
            topic.append(b"entry %d" % n)
        assert blocking.waiting.wait(10), "the background offload never reached the store"
        for n in range(100, 250):  # and appends, seals included, go on while it is stuck in the store
            topic.append(b"entry %d" % n)
        assert topic.ledgers()[0].tier in ("hot", "offloading")
    finally:
        blocking.parts.set()
    assert broker.drain(30)
    assert [s.tier for s in topic.ledgers()] == ["hot+offloaded", "hot+offloaded", "hot"]
    assert [e.data for e in topic.read(Position(1, 0), 300)] == [b"entry %d" % n for n in range(250)]


def test_appends_go_on_while_an_offloads_metadata_update_waits_on_the_store(make_broker: Any, monkeypatch: Any) -> None:
    """An offload's metadata update, off the producer's thread, reads and
    writes the store without the ledger's lock: a slow metadata store (a
    remote one, say) does not stall appends that need no update."""
    broker = make_broker()
    topic = broker.topic(TOPIC)
    for n in range(201):  # ledgers 1 and 2 sealed, the 201st entry in ledger 3
        topic.append(b"entry %d" % n)
    store, gate, waiting = topic._store, threading.Event(), threading.Event()
    plain_set = store.set

    def slow_set(path: str, value: bytes, expected_version: int) -> Any:
        if path == topic._path and threading.current_thread() is offloader:
            waiting.set()
            gate.wait(30)
        return plain_set(path, value, expected_version)

    outcome: list[Any] = []
    offloader = threading.Thread(target=lambda: outcome.append(topic.offload_prefix()))
    appender = threading.Thread(target=lambda: [topic.append(b"entry %d" % n) for n in range(201, 251)])
    monkeypatch.setattr(store, "set", slow_set)
    offloader.start()
    try:
        assert waiting.wait(10), "the offload never updated the metadata"
        appender.start()
        appender.join(10)
        assert not appender.is_alive(), "appends waited for the offload's metadata update"
        assert topic.read(topic.last_position, 1)[0].data == b"entry 250"
    finally:
        gate.set()
        appender.join(30)
        offloader.join(30)
    assert outcome[0].status == "success"
    assert [s.tier for s in topic.ledgers()] == ["hot+offloaded", "hot+offloaded", "hot"]
    assert [e.data for e in topic.read(Position(1, 0), 300)] == [b"entry %d" % n for n in range(251)]
