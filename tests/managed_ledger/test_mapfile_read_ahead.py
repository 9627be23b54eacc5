"""The broker's read-ahead into the next ledger with the file-system
offloader: a reader finishing one MapFile ledger has the next one's
handle opened and its first ranges fetched before it gets there, as with
PIP-17 ledgers (tests/managed_ledger/test_read_ahead_settings.py)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from offload_core import InMemoryReadHandle
from offload_core.managed_ledger import ReadPriority
from offload_core.memory import MemoryDriver
from offload_core.model import Position
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.offload.reading.read_handle import PrefetchingHandle
from tests.managed_ledger.conftest import FaultyStorePlugin

TOPIC = "acme/prod/a"
PROFILE = """<?xml version='1.0' encoding='UTF-8'?>
<configuration>
    <property><name>hadoop.tmp.dir</name><value>{tmp_dir}</value></property>
    <property><name>io.seqfile.compression.type</name><value>BLOCK</value></property>
    <property><name>io.seqfile.compress.blocksize</name><value>2000</value></property>
    <property><name>io.map.index.interval</name><value>8</value></property>
</configuration>
"""


def test_a_reader_finishing_a_mapfile_ledger_has_the_next_one_read_ahead(
    make_broker: Any, faulty: FaultyStorePlugin, tmp_path: Path
) -> None:
    profile = tmp_path / "site.xml"
    profile.write_text(PROFILE.format(tmp_dir=tmp_path / "hadoop"))
    broker = make_broker(
        managedLedgerOffloadDriver="filesystem",
        fileSystemURI="file:///",
        fileSystemProfilePath=str(profile),
        managedLedgerOffloadDeletionLagMs=0,
        managedLedgerOffloadReadBufferSizeInBytes=512,
        managedLedgerOffloadReadAheadRangeBytes=2048,
        managedLedgerOffloadReadAheadBytesPerReader=8192,
    )
    ledger = broker.topic(TOPIC)
    payloads = [f"{TOPIC}-{n}-".encode() * 20 for n in range(301)]
    for data in payloads:
        ledger.append(data)
    ledger.offload_prefix(ledger.last_position)
    sealed = [state.ledger_id for state in ledger.ledgers() if state.tier == "offloaded"]
    assert len(sealed) >= 3

    def data_reads(ledger_id: int) -> int:
        return sum(1 for e in faulty.events if e.kind == "storage.request" and e.fields["op"] == "read"
                   and f"/{ledger_id}-" in str(e.fields["key"]) and str(e.fields["key"]).endswith("/data"))  # fmt: skip

    for before, after in zip(sealed, sealed[1:], strict=False):
        position = Position(before, 0)
        while position.ledger_id == before:
            batch = ledger.read_tiered(position, 10, priority=ReadPriority.OFFLOADED_FIRST)
            last = batch[-1].entry
            position = Position(last.ledger_id, last.entry_id + 1)
            if len(batch) < 10 or last.entry_id == 99:
                break
        assert broker.drain(30)
        assert data_reads(after) > 0, f"ledger {after} was not read ahead before its first read"
        first = sealed.index(after) * 100
        read = ledger.read_tiered(Position(after, 0), 100, priority=ReadPriority.OFFLOADED_FIRST)
        assert [t.entry.data for t in read if t.entry.ledger_id == after] == payloads[first : first + 100]


def test_a_mapfile_handle_prefetches_for_the_reader_that_comes_next() -> None:

    pool = ReadAheadPool(range_size=2048, reader_bytes=8192)
    offloader = MapFileLedgerOffloader(MemoryDriver(), block_size=2000, index_interval=16, read_ahead=pool,
                                       read_buffer_size=512)  # fmt: skip
    entries = [b"%d-" % n * 30 for n in range(300)]
    uid = uuid.UUID(int=7)
    offloader.offload(InMemoryReadHandle(5, entries), uid, {"ManagedLedgerName": "a/b/c"})
    handle = offloader.read_offloaded(5, uid, {"ManagedLedgerName": "a/b/c"})
    assert isinstance(handle, PrefetchingHandle)
    assert not handle.in_last_block(0) and handle.in_last_block(299)
    assert handle.prefetch(0) and pool.ranges > 0  # under way before any read
    assert not handle.prefetch(0)  # already followed
    assert [e.data for e in handle.read(0, 299)] == entries
    handle.close()
    pool.close()
