"""What an offload asks of the metadata store. The broker owns its managed
ledgers, so it writes their records from what it last wrote rather than
reading them first, and keeps effective policies until a policy record
changes: fewer statements on the interpreter its producers share
(bench/README.md). Anyone else's write is still seen and never
overwritten: a conflict, then a fresh read; conflicts that persist raise."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from offload_core.errors import ConflictError
from offload_core.managed_ledger import ReadPriority
from offload_core.managed_ledger.metadata_store import SqliteMetadataStore
from offload_core.model import Position
from offload_core.proto import KeyValue, ManagedLedgerInfo

TOPIC = "acme/prod/orders"


def _count_reads(topic: Any, monkeypatch: Any) -> Counter[str]:
    """Counts the store's reads by the first part of their path."""
    reads: Counter[str] = Counter()
    plain_get = topic._store.get

    def get(path: str) -> Any:
        reads[path.split("/", 1)[0]] += 1
        return plain_get(path)

    monkeypatch.setattr(topic._store, "get", get)
    return reads


def test_an_offload_reads_no_record_its_broker_wrote(make_broker: Any, monkeypatch: Any) -> None:
    broker = make_broker()
    topic = broker.topic(TOPIC)
    for n in range(250):  # ledgers 1 and 2 sealed
        topic.append(b"entry %d" % n)
    topic.offload_prefix(Position(2, 0))  # the first offload writes the status record
    reads = _count_reads(topic, monkeypatch)
    status = topic.offload_prefix()
    assert status.status == "success" and status.offloaded_ledgers == 1
    assert reads == Counter(), f"an offload read records the broker itself wrote: {dict(reads)}"
    assert [s.tier for s in topic.ledgers()] == ["hot+offloaded", "hot+offloaded", "hot"]


def test_records_written_by_someone_else_are_read_afresh(make_broker: Any) -> None:
    broker = make_broker()
    topic = broker.topic(TOPIC)
    for n in range(250):
        topic.append(b"entry %d" % n)
    topic.offload_prefix(Position(2, 0))
    other = SqliteMetadataStore(topic._store.path)  # another process, in life
    for path in (topic._path, f"offload-status/{topic.name}"):
        record = other.get(path)
        assert record is not None
        other.set(path, record.value, record.version)  # moves the version the broker last wrote
    status = topic.offload_prefix()
    assert status.status == "success" and status.offloaded_ledgers == 1
    assert topic.offload_status().status == "success"
    stored = other.get(topic._path)
    other.close()
    assert stored is not None and stored.value == topic._info.SerializeToString()
    assert [s.tier for s in topic.ledgers()] == ["hot+offloaded", "hot+offloaded", "hot"]
    assert [e.data for e in topic.read(Position(1, 0), 300)] == [b"entry %d" % n for n in range(250)]


def test_effective_policies_are_not_reread_after_a_ledgers_own_update(make_broker: Any, monkeypatch: Any) -> None:
    broker = make_broker()
    topic = broker.topic(TOPIC)
    topic.policies()
    reads = _count_reads(topic, monkeypatch)
    for n in range(150):  # a seal: the ledger's record updated twice
        topic.append(b"entry %d" % n)
    topic.policies()
    assert reads["policies"] == 0
    broker.policies.update("topic", TOPIC, read_priority=ReadPriority.OFFLOADED_FIRST)
    assert topic.policies().read_priority is ReadPriority.OFFLOADED_FIRST
    other = SqliteMetadataStore(topic._store.path)
    record = other.get(f"policies/topic/{TOPIC}")
    assert record is not None
    other.set(f"policies/topic/{TOPIC}", record.value.replace(b"offloaded-first", b"bookkeeper-first"), record.version)
    other.close()
    assert topic.policies().read_priority is ReadPriority.BOOKKEEPER_FIRST


def test_a_concurrent_metadata_writer_is_never_overwritten(make_broker: Any, tmp_path: Any) -> None:
    broker = make_broker()
    ledger = broker.topic(TOPIC)
    ledger.append(b"x")
    path = f"managed-ledgers/{ledger.name}"
    other = type(broker.store)(tmp_path / "data" / "metadata.db")  # a second writer on the same store
    real_set = broker.store.set
    interfered: list[int] = []

    def set_after_interference(record_path: str, value: bytes, version: int) -> Any:
        if record_path == path and not interfered:
            current = other.get(path)
            info = ManagedLedgerInfo.FromString(current.value)  # type: ignore[union-attr]
            info.properties.append(KeyValue(key="written-by", value="the other writer"))
            other.set(path, info.SerializeToString(), current.version)  # type: ignore[union-attr]
            interfered.append(1)
        return real_set(record_path, value, version)

    broker.store.set = set_after_interference  # type: ignore[method-assign]
    for _ in range(99):
        ledger.append(b"x")  # fills the ledger: sealing updates the metadata
    broker.store.set = real_set  # type: ignore[method-assign]
    stored = ManagedLedgerInfo.FromString(other.get(path).value)  # type: ignore[union-attr]
    assert [kv.key for kv in stored.properties] == ["written-by"]
    assert stored.ledgerInfo[0].entries == 100


def test_conflicts_that_persist_raise(make_broker: Any) -> None:
    broker = make_broker()
    ledger = broker.topic(TOPIC)

    def always_conflict(*args: Any) -> Any:
        raise ConflictError("another writer keeps winning")

    broker.store.set = always_conflict  # type: ignore[method-assign]
    with pytest.raises(ConflictError):
        ledger.append(b"x")
