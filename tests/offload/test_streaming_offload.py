"""PIP-76 OffloadHandle: segments streamed while entries are offered."""

from __future__ import annotations

import random
import threading
import time
import uuid as uuid_module
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import ConfigError, InvalidRangeError
from offload_core.formats import entry_offsets
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.memory import MemoryDriver
from offload_core.model import Entry, ObjectInfo
from offload_core.offload import BlobStoreLedgerOffloader, OfferResult, SegmentLimits
from offload_core.offload.segments.segment_reads import iter_segment_entries
from offload_core.offload.segments.segment_types import entry_runs
from offload_core.storage import BytesLike
from offload_core.testing.faults import Fault, FaultyDriver
from tests.pulsar_vectors import load_segment_vectors

BLOCK = 1024
LIMITS = SegmentLimits(streaming_block_size=BLOCK, max_segment_size=1 << 30, max_buffer_size=8 * BLOCK)


def new_uuid() -> str:
    return str(uuid_module.uuid4())


def entries_of(ledgers: dict[int, int], seed: int = 1) -> list[Entry]:
    rng = random.Random(seed)
    return [
        Entry(ledger_id, entry_id, rng.randbytes(rng.randrange(0, 300)))
        for ledger_id, count in ledgers.items()
        for entry_id in range(count)
    ]


class GatedDriver(MemoryDriver):
    """A memory store whose writes pull each part only when the gate is
    open, and that records how many parts each write has pulled."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.parts_pulled: dict[str, int] = {}

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        def pulled() -> Iterator[BytesLike]:
            for part in parts:
                self.parts_pulled[key] = self.parts_pulled.get(key, 0) + 1
                yield part
                self.gate.wait()

        return super()._write(key, pulled(), metadata, if_absent)


def offer_all(handle, entries: list[Entry]) -> None:  # type: ignore[no-untyped-def]
    """Offer each entry, waiting for the upload when the buffer is full."""
    for entry in entries:
        deadline = time.monotonic() + 10
        while (result := handle.offer_entry(entry)) is OfferResult.FAIL_BUFFER_FULL:
            assert time.monotonic() < deadline, "the upload never made room"
            time.sleep(0.001)
        assert result is OfferResult.SUCCESS, entry


def wait_for(condition, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never became true"
        time.sleep(0.005)


@pytest.mark.parametrize("with_offsets", [False, True])
def test_pulsars_segment_is_reproduced_byte_for_byte(with_offsets: bool) -> None:
    (vector,) = load_segment_vectors()
    infos = {s.ledger_id: s.ledger_info for s in v2.decode_index(vector.index).ledgers}
    driver = MemoryDriver()
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=65536, entry_offsets=with_offsets)
    size = vector.spec["streaming_block_size"]
    limits = SegmentLimits(streaming_block_size=size, max_buffer_size=4 * size)
    handle = offloader.streaming_offload(new_uuid(), limits=limits, ledger_info=lambda ledger, _last: infos[ledger])
    offer_all(handle, [Entry(*e) for e in vector.entries])
    handle.close()
    result = handle.result(10)
    assert result is not None
    data = driver.read(result.data_key)
    # Pulsar's readers stop at the data object length the index records: the entry offsets follow it.
    assert data[: len(vector.data)] == vector.data
    assert len(data) == len(vector.data) if not with_offsets else entry_offsets.is_section(data[len(vector.data) :])
    assert driver.read(result.index_key) == vector.index
    begin_end = (result.begin_ledger_id, result.begin_entry_id, result.end_ledger_id, result.end_entry_id)
    assert begin_end == (15, 10, 16, 19)
    assert driver.stat(result.data_key).metadata[v1.FORMAT_VERSION_KEY] == v1.FORMAT_VERSION


def test_pulsars_segment_is_read_by_ledger_and_in_order() -> None:
    (vector,) = load_segment_vectors()
    driver = MemoryDriver()
    uuid = new_uuid()
    version = {v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION}
    driver.write(v2.segment_data_key(uuid), vector.data, metadata=version)
    driver.write(v2.segment_index_key(uuid), vector.index, metadata=version)
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=65536)
    expected = {(lid, eid): payload for lid, eid, payload in vector.entries}
    for ledger_id, first, last in ((15, 10, 39), (16, 0, 19)):
        handle = offloader.read_segment(uuid, ledger_id)
        assert handle.last_entry_id == last
        for entry_id in random.Random(ledger_id).sample(range(first, last + 1), last - first + 1):
            assert handle.read(entry_id, entry_id)[0].data == expected[(ledger_id, entry_id)]
        assert [e.data for e in handle.read(first, last)] == [expected[(ledger_id, e)] for e in range(first, last + 1)]
        with pytest.raises(InvalidRangeError):
            handle.read(last + 1, last + 1)
    with pytest.raises(InvalidRangeError, match="segment holds entries 10..39 of ledger 15"):
        offloader.read_segment(uuid, 15).read(9, 9)
    with pytest.raises(InvalidRangeError, match="holds no entry of ledger 17"):
        offloader.read_segment(uuid, 17)
    segment = offloader.open_segment(uuid)
    assert [(e.ledger_id, e.entry_id, e.data) for e in iter_segment_entries(driver, segment)] == vector.entries


def test_blocks_are_uploaded_while_the_segment_is_still_open() -> None:
    driver = GatedDriver()
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    entries = entries_of({3: 60})
    offer_all(handle, entries)
    wait_for(lambda: driver.parts_pulled.get(handle.data_key, 0) >= 3)
    assert not handle.closed and not handle.done()
    handle.close()
    result = handle.result(10)
    assert result is not None and result.blocks >= 4
    assert driver.parts_pulled[handle.data_key] == result.blocks + 1  # one part per block, then the entry offsets
    read = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).read_segment(result.uuid, 3, last_entry_id=59)
    assert [e.data for e in read.read(0, 59)] == [e.data for e in entries]


class StuckPayloads(list[bytes]):
    """Payloads whose offer stops (holding the handle's lock) until ``go`` is set."""

    def __init__(self, payloads: list[bytes]) -> None:
        super().__init__(payloads)
        self.stuck = threading.Event()
        self.go = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        self.stuck.set()
        assert self.go.wait(10)
        return super().__iter__()


def test_an_offer_in_progress_does_not_hold_up_the_upload_of_finished_blocks() -> None:
    driver = GatedDriver()
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    driver.gate.clear()  # the upload stops after its first part until the gate opens
    assert handle.offer_run(3, 0, [b"x" * BLOCK, b"y" * BLOCK]) == (2, OfferResult.SUCCESS)  # two blocks finished
    wait_for(lambda: driver.parts_pulled.get(handle.data_key, 0) == 1)
    stuck = StuckPayloads([b"z" * 100] * 3)
    offer = threading.Thread(target=handle.offer_run, args=(3, 2, stuck))
    offer.start()
    assert stuck.stuck.wait(10)
    driver.gate.set()  # the upload takes the second block while the offer is still framing its entries
    try:
        wait_for(lambda: driver.parts_pulled.get(handle.data_key, 0) == 2, timeout=5)
    finally:
        stuck.go.set()
        offer.join(10)
    handle.close()
    result = handle.result(10)
    assert result is not None and (result.end_entry_id, result.blocks) == (4, 3)


def test_a_segment_spans_ledgers_and_reports_their_ranges() -> None:
    driver = MemoryDriver()
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK)
    handle = offloader.streaming_offload(new_uuid(), limits=LIMITS)
    entries = [Entry(4, e + 7, d) for e, (_, _, d) in enumerate((x.ledger_id, x.entry_id, x.data) for x in
                                                                 entries_of({4: 30}))]  # fmt: skip
    entries += entries_of({5: 10, 9: 25}, seed=2)
    offer_all(handle, entries)
    assert handle.last_offered() == (9, 24)
    handle.close()
    result = handle.result(10)
    assert result is not None
    assert [(r.ledger_id, r.first_entry_id, r.last_entry_id) for r in result.ledgers] == [(4, 7, 36), (5, 0, 9),
                                                                                         (9, 0, 24)]  # fmt: skip
    segment = offloader.open_segment(result.uuid)
    assert [(e.ledger_id, e.entry_id, e.data) for e in iter_segment_entries(driver, segment)] == [
        (e.ledger_id, e.entry_id, e.data) for e in entries
    ]
    assert [e.entry_id for e in iter_segment_entries(driver, segment, ledger_id=5)] == list(range(10))


def test_a_batch_is_taken_up_to_the_first_entry_that_does_not_follow() -> None:
    handle = BlobStoreLedgerOffloader(MemoryDriver(), max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    batch = [Entry(5, 0, b"a"), Entry(5, 1, b"b"), Entry(6, 0, b"c"), Entry(6, 1, b"d"), Entry(6, 3, b"e")]
    assert handle.offer_entries(batch) == (4, OfferResult.FAIL_NOT_CONSECUTIVE)
    assert handle.last_offered() == (6, 1)
    assert handle.offer_run(6, 2, [b"f", b"g"]) == (2, OfferResult.SUCCESS)
    assert handle.offer_run(6, 5, [b"h"]) == (0, OfferResult.FAIL_NOT_CONSECUTIVE)
    handle.close()
    result = handle.result(10)
    assert result is not None
    assert [(r.ledger_id, r.first_entry_id, r.last_entry_id) for r in result.ledgers] == [(5, 0, 1), (6, 0, 3)]


def test_a_batch_whose_ids_follow_on_across_ledgers_is_not_one_run() -> None:
    handle = BlobStoreLedgerOffloader(MemoryDriver(), max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    assert handle.offer_entries([Entry(7, 0, b"a"), Entry(8, 1, b"b")]) == (1, OfferResult.FAIL_NOT_CONSECUTIVE)
    assert handle.last_offered() == (7, 0)
    handle.close()


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6)), max_size=30))
def test_a_batch_falls_into_the_runs_an_entry_by_entry_walk_finds(ids: list[tuple[int, int]]) -> None:
    batch = [Entry(ledger_id, entry_id, b"") for ledger_id, entry_id in ids]
    walked: list[tuple[int, int]] = []
    for at, entry in enumerate(batch):
        if walked and (batch[at - 1].ledger_id, batch[at - 1].entry_id + 1) == (entry.ledger_id, entry.entry_id):
            walked[-1] = (walked[-1][0], at + 1)
        else:
            walked.append((at, at + 1))
    assert list(entry_runs([e.ledger_id for e in batch], [e.entry_id for e in batch])) == walked
    assert list(entry_runs((1, 1, 3), (0, 2, 3))) == [(0, 1), (1, 2), (2, 3)]


def test_entries_must_follow_each_other() -> None:
    handle = BlobStoreLedgerOffloader(MemoryDriver(), max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    assert handle.offer_entry(Entry(5, 3, b"a")) is OfferResult.SUCCESS
    for ledger_id, entry_id in ((5, 5), (5, 3), (4, 0), (6, 1)):
        assert handle.offer_entry(Entry(ledger_id, entry_id, b"b")) is OfferResult.FAIL_NOT_CONSECUTIVE
    assert handle.offer_entry(Entry(6, 0, b"c")) is OfferResult.SUCCESS
    assert handle.offer_entry(Entry(5, 4, b"d")) is OfferResult.FAIL_NOT_CONSECUTIVE
    handle.close()
    assert handle.offer_entry(Entry(6, 1, b"e")) is OfferResult.FAIL_SEGMENT_CLOSED
    assert not handle.can_offer(1)
    assert handle.result(10) is not None


@pytest.mark.parametrize("batch", [1, 64])
def test_a_segment_closes_itself_at_its_size(batch: int) -> None:
    limits = SegmentLimits(streaming_block_size=BLOCK, max_segment_size=4 * BLOCK, max_buffer_size=8 * BLOCK)
    driver = MemoryDriver()
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(new_uuid(), limits=limits)
    entries = entries_of({1: 200})
    taken = 0
    while taken < len(entries):
        count, outcome = handle.offer_entries(entries[taken : taken + batch])
        taken += count
        if outcome is not OfferResult.SUCCESS:
            assert outcome is OfferResult.FAIL_SEGMENT_CLOSED
            break
    assert handle.closed and 0 < taken < 200
    result = handle.result(10)
    assert result is not None
    assert result.end_entry_id == taken - 1
    assert 4 * BLOCK <= result.data_object_length < 5 * BLOCK + 300


def test_a_segment_closes_itself_at_its_age() -> None:
    now = [100.0]
    limits = SegmentLimits(streaming_block_size=BLOCK, max_segment_age=60.0, max_buffer_size=8 * BLOCK)
    handle = BlobStoreLedgerOffloader(MemoryDriver(), max_block_size=BLOCK).streaming_offload(
        new_uuid(), limits=limits, clock=lambda: now[0]
    )
    assert handle.offer_entry(Entry(1, 0, b"x")) is OfferResult.SUCCESS
    now[0] += 59.9
    assert not handle.close_if_due()
    assert handle.offer_entry(Entry(1, 1, b"y")) is OfferResult.SUCCESS
    now[0] += 0.1
    assert handle.offer_entry(Entry(1, 2, b"z")) is OfferResult.FAIL_SEGMENT_CLOSED
    result = handle.result(10)
    assert result is not None and result.end_entry_id == 1


@pytest.mark.parametrize("batch", [1, 37])
def test_the_buffer_bound_holds_under_a_producer_faster_than_the_store(batch: int) -> None:
    driver = GatedDriver()
    driver.gate.clear()
    limits = SegmentLimits(streaming_block_size=BLOCK, max_buffer_size=4 * BLOCK)
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(new_uuid(), limits=limits)
    entries = entries_of({2: 400})
    taken = 0
    refused = 0
    deadline = time.monotonic() + 30
    while taken < len(entries):
        assert time.monotonic() < deadline
        count, result = handle.offer_entries(entries[taken : taken + batch])
        taken += count
        if result is not OfferResult.SUCCESS:
            assert result is OfferResult.FAIL_BUFFER_FULL
            refused += 1
            assert handle.buffered_bytes <= limits.max_buffer_size
            if refused % 50 == 0:  # let the store take one part now and then
                driver.gate.set()
                driver.gate.clear()
        assert handle.peak_buffered_bytes <= limits.max_buffer_size
    driver.gate.set()
    handle.close()
    result = handle.result(10)
    assert refused > 0
    assert result is not None and result.end_entry_id == 399
    assert handle.peak_buffered_bytes <= limits.max_buffer_size


def test_a_failed_upload_leaves_no_object() -> None:
    memory = MemoryDriver()
    driver = FaultyDriver(memory, [Fault("part", nth=3, permanent=True)])
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    for entry in entries_of({1: 100}):
        if handle.offer_entry(entry) is not OfferResult.SUCCESS:
            break
    handle.close()
    with pytest.raises(Exception, match="injected permanent failure"):
        handle.result(10)
    assert list(memory.list()) == []
    assert handle.buffered_bytes == 0


def test_an_index_write_failure_removes_the_data_object_too() -> None:
    memory = MemoryDriver()
    driver = FaultyDriver(memory, [Fault("write", key="-index", permanent=True)])
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    offer_all(handle, entries_of({1: 20}))
    handle.close()
    with pytest.raises(Exception, match="injected permanent failure"):
        handle.result(10)
    assert list(memory.list()) == []


def test_abort_cancels_the_upload_and_removes_what_it_wrote() -> None:
    driver = GatedDriver()
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    offer_all(handle, entries_of({1: 40}))
    wait_for(lambda: driver.parts_pulled.get(handle.data_key, 0) >= 1)
    handle.abort()
    assert handle.offer_entry(Entry(1, 40, b"x")) is OfferResult.FAIL_SEGMENT_CLOSED
    with pytest.raises(Exception, match="aborted"):
        handle.result(10)
    assert list(driver.list()) == []


def test_an_empty_segment_writes_nothing() -> None:
    driver = MemoryDriver()
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(new_uuid(), limits=LIMITS)
    handle.close()
    assert handle.result(10) is None
    assert list(driver.list()) == []


def test_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="two streaming blocks"):
        SegmentLimits(streaming_block_size=BLOCK, max_buffer_size=BLOCK)
    with pytest.raises(ConfigError, match="maxSizePerOffloadSegmentMbytes"):
        SegmentLimits(streaming_block_size=BLOCK, max_segment_size=BLOCK - 1, max_buffer_size=2 * BLOCK)
    with pytest.raises(ConfigError, match="maxOffloadSegmentRolloverTimeMinutes"):
        SegmentLimits(streaming_block_size=BLOCK, max_segment_age=0, max_buffer_size=2 * BLOCK)


def test_deleting_a_segment_is_idempotent() -> None:
    driver = MemoryDriver()
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK)
    handle = offloader.streaming_offload(new_uuid(), limits=LIMITS)
    offer_all(handle, entries_of({1: 5}))
    handle.close()
    result = handle.result(10)
    assert result is not None
    offloader.delete_segment(result.uuid)
    offloader.delete_segment(result.uuid)
    assert list(driver.list()) == []
