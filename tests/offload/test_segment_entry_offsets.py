"""Entry offsets of PIP-76 segments: a companion object written before the
index, read when present, ignored when absent or damaged."""

from __future__ import annotations

import random
import threading
import uuid as uuid_module
from collections.abc import Iterator

import pytest

from offload_core.formats import entry_offsets
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.memory import MemoryDriver
from offload_core.model import Entry, ObjectInfo
from offload_core.offload import BlobStoreLedgerOffloader, SegmentLimits
from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.storage import BytesLike
from offload_core.testing.faults import Fault, FaultyDriver, InjectedFault
from tests.offload.test_streaming_offload import offer_all

LIMITS = SegmentLimits(streaming_block_size=2048, max_segment_size=1 << 30, max_buffer_size=1 << 20)
LEDGERS = {3: 700, 4: 500}
ENTRIES = {
    ledger_id: [random.Random(ledger_id).randbytes(n % 250 + 1) for n in range(count)]
    for ledger_id, count in LEDGERS.items()
}


def streamed(store: MemoryDriver, *, with_offsets: bool = True) -> tuple[BlobStoreLedgerOffloader, str]:
    offloader = BlobStoreLedgerOffloader(store, max_block_size=2048, read_buffer_size=256, entry_offsets=with_offsets)
    uid = str(uuid_module.uuid4())
    handle = offloader.streaming_offload(uid, limits=LIMITS)
    offer_all(handle, [Entry(led, n, data) for led, payloads in ENTRIES.items() for n, data in enumerate(payloads)])
    handle.close()
    assert handle.result(10) is not None
    return offloader, uid


def test_a_segment_carries_the_lengths_of_every_entry_block_by_block() -> None:
    store = MemoryDriver()
    _, uid = streamed(store)
    section = entry_offsets.decode_section(store.read(v2.segment_entry_offsets_key(uid)))
    assert list(section.lengths) == [len(p) for payloads in ENTRIES.values() for p in payloads]
    assert section.block_count == len(v2.decode_index(store.read(v2.segment_index_key(uid))).blocks)


@pytest.mark.parametrize("with_offsets", [True, False])
def test_cold_random_reads_cost_one_get_with_offsets_and_give_the_same_entries_without(with_offsets: bool) -> None:
    store = MemoryDriver()
    offloader, uid = streamed(store, with_offsets=with_offsets)
    most_gets = []
    for ledger_id, payloads in ENTRIES.items():
        for entry_id in random.Random(ledger_id).sample(range(len(payloads)), 25):
            handle = offloader.read_segment(uid, ledger_id, last_entry_id=len(payloads) - 1)
            before = offloader.requests.requests["read"]
            assert handle.read(entry_id, entry_id)[0].data == payloads[entry_id]
            most_gets.append(offloader.requests.requests["read"] - before)
    if with_offsets:
        assert set(most_gets) == {1}
    else:
        assert max(most_gets) > 1  # a walk from the block's start


def test_a_sequential_segment_read_is_served_by_read_ahead() -> None:
    store = MemoryDriver()
    pool = ReadAheadPool(total_bytes=1 << 16, reader_bytes=1 << 14, range_size=4096)
    writer, uid = streamed(store)
    offloader = BlobStoreLedgerOffloader(store, read_buffer_size=256, read_ahead=pool)
    for ledger_id, payloads in ENTRIES.items():
        handle = offloader.read_segment(uid, ledger_id, last_entry_id=len(payloads) - 1)
        got = [e.data for first in range(0, len(payloads), 50)
               for e in handle.read(first, min(first + 49, len(payloads) - 1))]  # fmt: skip
        assert got == payloads
        handle.close()
    assert pool.fetches > 10
    pool.close()
    writer.close()


def test_a_damaged_or_missing_companion_costs_speed_not_data() -> None:
    store = MemoryDriver()
    offloader, uid = streamed(store)
    key = v2.segment_entry_offsets_key(uid)
    good = store.read(key)
    lengths = entry_offsets.decode_section(good)
    shifted = [list(lengths.block_lengths(n)) for n in range(lengths.block_count)]
    shifted[0], shifted[1] = shifted[0][:-1], [shifted[0][-1], *shifted[1]]  # counts no longer match the index
    for damaged in (good[:-1] + bytes([good[-1] ^ 4]), entry_offsets.encode_section(shifted), None):
        if damaged is None:
            store.delete([key])
        else:
            store.write(key, damaged, metadata={v1.FORMAT_VERSION_KEY: "1"})
        for ledger_id, payloads in ENTRIES.items():
            handle = offloader.read_segment(uid, ledger_id, last_entry_id=len(payloads) - 1)
            picks = random.Random(1).sample(range(len(payloads)), 10)
            assert [handle.read(n, n)[0].data for n in picks] == [payloads[n] for n in picks]


def test_deleting_a_segment_deletes_its_entry_offsets() -> None:
    store = MemoryDriver()
    offloader, uid = streamed(store)
    offloader.delete_segment(uid)
    assert list(store.list("")) == []


def test_the_companion_is_listed_with_its_segment() -> None:
    from offload_core.offload.segments.segment_inventory import find_segments

    store = MemoryDriver()
    _, uid = streamed(store)
    parsed = v2.parse_segment_key("topic/" + v2.segment_entry_offsets_key(uid))
    assert parsed == v2.SegmentKey("topic/", uid, is_index=False, is_entry_offsets=True)
    (segment,) = find_segments(store)
    assert segment.complete and segment.entry_offsets is not None
    assert segment.entry_offsets.key == v2.segment_entry_offsets_key(uid)
    store.delete([v2.segment_data_key(uid), v2.segment_index_key(uid)])
    (orphan,) = find_segments(store)  # a companion left alone is still seen, so it can be swept
    assert not orphan.complete and orphan.entry_offsets is not None


class DurabilityGatedDriver(MemoryDriver):
    """A memory store whose data-object writes, after their last part,
    wait (as a disk's fsync does) until the entry-offsets object exists or
    a timeout passes, and then fail if ``fail_data`` is set. Records the
    order in which objects became visible."""

    def __init__(self, *, fail_data: bool = False) -> None:
        super().__init__()
        self.fail_data = fail_data
        self.offsets_written = threading.Event()
        self.waited_for_offsets: bool | None = None
        self.visible: list[str] = []

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        parsed = v2.parse_segment_key(key)
        if parsed is not None and not (parsed.is_index or parsed.is_entry_offsets):
            body = b"".join(parts)
            self.waited_for_offsets = self.offsets_written.wait(5)
            if self.fail_data:
                raise InjectedFault("injected permanent failure: the data object's fsync")
            info = super()._write(key, iter([body]), metadata, if_absent)
        else:
            info = super()._write(key, parts, metadata, if_absent)
            if key.endswith("-entry-offsets"):
                self.offsets_written.set()
        self.visible.append(key)
        return info


def test_entry_offsets_are_written_while_the_data_object_is_made_durable() -> None:
    store = DurabilityGatedDriver()
    _, uid = streamed(store)
    assert store.waited_for_offsets is True  # written beside the data object's tail, not after it
    assert store.visible[-1] == v2.segment_index_key(uid)  # the index still comes last
    section = entry_offsets.decode_section(store.read(v2.segment_entry_offsets_key(uid)))
    assert list(section.lengths) == [len(p) for payloads in ENTRIES.values() for p in payloads]


def test_a_data_object_failing_after_its_entry_offsets_were_written_leaves_no_object() -> None:
    store = DurabilityGatedDriver(fail_data=True)
    handle = BlobStoreLedgerOffloader(store, max_block_size=2048).streaming_offload(str(uuid_module.uuid4()),
                                                                                    limits=LIMITS)  # fmt: skip
    offer_all(handle, [Entry(3, n, data) for n, data in enumerate(ENTRIES[3])])
    handle.close()
    with pytest.raises(InjectedFault, match="fsync"):
        handle.result(10)
    assert store.waited_for_offsets is True
    assert list(store.list("")) == []


def test_an_entry_offsets_failure_fails_the_segment_and_leaves_no_object() -> None:
    memory = MemoryDriver()
    store = FaultyDriver(memory, [Fault("write", key="-entry-offsets", permanent=True)])
    handle = BlobStoreLedgerOffloader(store, max_block_size=2048).streaming_offload(str(uuid_module.uuid4()),
                                                                                    limits=LIMITS)  # fmt: skip
    offer_all(handle, [Entry(3, n, data) for n, data in enumerate(ENTRIES[3])])
    handle.close()
    with pytest.raises(InjectedFault):
        handle.result(10)
    assert list(memory.list("")) == []
