"""What an offload asks of the metadata store. The broker owns its managed
ledgers, so it writes their records from what it last wrote rather than
reading them first, and keeps effective policies until a policy record
changes: fewer statements on the interpreter its producers share
(bench/README.md). Anyone else's write is still seen: a conflict, then a
fresh read."""

from __future__ import annotations

from collections import Counter
from typing import Any

from offload_core.managed_ledger import ReadPriority
from offload_core.managed_ledger.metadata_store import SqliteMetadataStore
from offload_core.model import Position

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
