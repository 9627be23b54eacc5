"""Entry offsets of PIP-76 segments: a section after the data object's
blocks, past the length the index records, so a segment Pulsar deletes
(its data and index objects) leaves nothing behind; read when sound,
ignored when absent or damaged; the companion object segments written
before had is still read."""

from __future__ import annotations

import random
import uuid as uuid_module

import pytest

from offload_core.formats import entry_offsets
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.memory import MemoryDriver
from offload_core.model import Entry
from offload_core.offload import BlobStoreLedgerOffloader, SegmentLimits
from offload_core.offload.reading.read_ahead import ReadAheadPool
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


def trailing_section(store: MemoryDriver, uid: str) -> bytes:
    index = v2.decode_index(store.read(v2.segment_index_key(uid)))
    return store.read(v2.segment_data_key(uid), index.data_object_length, store.stat(v2.segment_data_key(uid)).size)


def test_a_segment_carries_the_lengths_of_every_entry_block_by_block_after_its_blocks() -> None:
    store = MemoryDriver()
    _, uid = streamed(store)
    section = entry_offsets.decode_section(trailing_section(store, uid))
    assert list(section.lengths) == [len(p) for payloads in ENTRIES.values() for p in payloads]
    assert section.block_count == len(v2.decode_index(store.read(v2.segment_index_key(uid))).blocks)


@pytest.mark.parametrize("with_offsets", [True, False])
def test_a_segment_pulsar_deletes_leaves_nothing_behind(with_offsets: bool) -> None:
    store = MemoryDriver()
    _, uid = streamed(store, with_offsets=with_offsets)
    # BlobStoreManagedLedgerOffloader.deleteOffloaded(UUID, ...) removes exactly these two keys.
    store.delete([uid, f"{uid}-index"])
    assert list(store.list("")) == []


def test_without_offsets_the_data_object_is_exactly_what_the_index_records() -> None:
    store = MemoryDriver()
    _, uid = streamed(store, with_offsets=False)
    index = v2.decode_index(store.read(v2.segment_index_key(uid)))
    assert store.stat(v2.segment_data_key(uid)).size == index.data_object_length


def as_written_before(store: MemoryDriver, uid: str) -> None:
    """Rewrite a segment as segments were written before the section moved
    into the data object: blocks only, the section in a third object."""
    section = trailing_section(store, uid)
    key = v2.segment_data_key(uid)
    blocks = store.read(key, 0, store.stat(key).size - len(section))
    store.write(key, blocks, metadata={v1.FORMAT_VERSION_KEY: "1"})
    store.write(v2.segment_entry_offsets_key(uid), section, metadata={v1.FORMAT_VERSION_KEY: "1"})


@pytest.mark.parametrize("layout", ["trailing", "written before", "none"])
def test_cold_random_reads_cost_one_get_with_offsets_and_give_the_same_entries_without(layout: str) -> None:
    store = MemoryDriver()
    offloader, uid = streamed(store, with_offsets=layout != "none")
    if layout == "written before":
        as_written_before(store, uid)
    with_offsets = layout != "none"
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


def damaged_sections(good: bytes) -> list[bytes]:
    lengths = entry_offsets.decode_section(good)
    shifted = [list(lengths.block_lengths(n)) for n in range(lengths.block_count)]
    shifted[0], shifted[1] = shifted[0][:-1], [shifted[0][-1], *shifted[1]]  # counts no longer match the index
    return [good[:-1] + bytes([good[-1] ^ 4]), entry_offsets.encode_section(shifted), b"\0" * 7]


def test_damaged_bytes_after_the_blocks_cost_speed_not_data() -> None:
    store = MemoryDriver()
    offloader, uid = streamed(store)
    good = trailing_section(store, uid)
    key = v2.segment_data_key(uid)
    blocks = store.read(key, 0, store.stat(key).size - len(good))
    for damaged in damaged_sections(good):
        store.write(key, blocks + damaged, metadata={v1.FORMAT_VERSION_KEY: "1"})
        for ledger_id, payloads in ENTRIES.items():
            handle = offloader.read_segment(uid, ledger_id, last_entry_id=len(payloads) - 1)
            picks = random.Random(1).sample(range(len(payloads)), 10)
            assert [handle.read(n, n)[0].data for n in picks] == [payloads[n] for n in picks]


def test_a_damaged_or_missing_companion_of_an_older_segment_costs_speed_not_data() -> None:
    store = MemoryDriver()
    offloader, uid = streamed(store)
    as_written_before(store, uid)
    key = v2.segment_entry_offsets_key(uid)
    good = store.read(key)
    for damaged in [*damaged_sections(good), None]:
        if damaged is None:
            store.delete([key])
        else:
            store.write(key, damaged, metadata={v1.FORMAT_VERSION_KEY: "1"})
        for ledger_id, payloads in ENTRIES.items():
            handle = offloader.read_segment(uid, ledger_id, last_entry_id=len(payloads) - 1)
            picks = random.Random(1).sample(range(len(payloads)), 10)
            assert [handle.read(n, n)[0].data for n in picks] == [payloads[n] for n in picks]


def test_deleting_an_older_segment_deletes_its_companion() -> None:
    store = MemoryDriver()
    offloader, uid = streamed(store)
    as_written_before(store, uid)
    offloader.delete_segment(uid)
    assert list(store.list("")) == []


def test_the_companion_of_an_older_segment_is_listed_with_it() -> None:
    from offload_core.offload.segments.segment_inventory import find_segments

    store = MemoryDriver()
    _, uid = streamed(store)
    as_written_before(store, uid)
    parsed = v2.parse_segment_key("topic/" + v2.segment_entry_offsets_key(uid))
    assert parsed == v2.SegmentKey("topic/", uid, is_index=False, is_entry_offsets=True)
    (segment,) = find_segments(store)
    assert segment.complete and segment.entry_offsets is not None
    assert segment.entry_offsets.key == v2.segment_entry_offsets_key(uid)
    store.delete([v2.segment_data_key(uid), v2.segment_index_key(uid)])
    (orphan,) = find_segments(store)  # a companion left alone is still seen, so it can be swept
    assert not orphan.complete and orphan.entry_offsets is not None


def test_a_failing_index_write_leaves_no_object_not_even_the_data_object() -> None:
    memory = MemoryDriver()
    store = FaultyDriver(memory, [Fault("write", key="-index", permanent=True)])
    handle = BlobStoreLedgerOffloader(store, max_block_size=2048).streaming_offload(str(uuid_module.uuid4()),
                                                                                    limits=LIMITS)  # fmt: skip
    offer_all(handle, [Entry(3, n, data) for n, data in enumerate(ENTRIES[3])])
    handle.close()
    with pytest.raises(InjectedFault):
        handle.result(10)
    assert list(memory.list("")) == []
