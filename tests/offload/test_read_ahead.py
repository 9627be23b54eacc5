"""Read-ahead of offloaded ledgers: every entry once and in order, the
byte budgets, cancellation on seek and close, single-flight downloads,
and the entry-offsets section's one GET per cold random read."""

from __future__ import annotations

import random
import threading
import uuid
from collections.abc import Iterator

import pytest

from offload_core import BlobStoreLedgerOffloader, ConfigError, InMemoryReadHandle
from offload_core.formats import entry_offsets
from offload_core.formats import pulsar_v1 as v1
from offload_core.memory import MemoryDriver
from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.testing.faults import Fault, FaultyDriver, InjectedFault, SlowDriver

UUID = uuid.UUID(int=5)
ENTRIES = [random.Random(5).randbytes(n % 300 + 1) for n in range(3000)]
RANGE = 4096


@pytest.fixture
def store() -> Iterator[MemoryDriver]:
    driver = MemoryDriver()
    BlobStoreLedgerOffloader(driver, max_block_size=64 * 1024).offload(InMemoryReadHandle(1, ENTRIES), UUID)
    yield driver


class Gate:
    """Holds every request of a wrapped driver until opened (the
    ``sleep`` of a :class:`SlowDriver` with no latency)."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.open.set()
        self.waiting = 0
        self._lock = threading.Lock()

    def __call__(self, _seconds: float) -> None:
        with self._lock:
            self.waiting += 1
        try:
            assert self.open.wait(10), "a test left the gate closed"
        finally:
            with self._lock:
                self.waiting -= 1


def settled(pool: ReadAheadPool) -> int:
    """The pool's charged bytes once downloads still running have ended
    (a running GET cannot be interrupted; its bytes are freed when it ends)."""
    for _ in range(500):
        if pool.charged_bytes == 0:
            break
        threading.Event().wait(0.01)
    return pool.charged_bytes


def read_all(handle: object, last: int, batch: int = 37) -> list[bytes]:
    out = []
    for first in range(0, last + 1, batch):
        out += [entry.data for entry in handle.read(first, min(first + batch - 1, last))]  # type: ignore[attr-defined]
    return out


def test_a_sequential_read_returns_every_entry_once_in_order_within_the_budget(store: MemoryDriver) -> None:
    pool = ReadAheadPool(total_bytes=3 * RANGE, reader_bytes=2 * RANGE, range_size=RANGE)
    offloader = BlobStoreLedgerOffloader(store, read_buffer_size=512, read_ahead=pool)
    handle = offloader.read_offloaded(1, UUID)
    assert read_all(handle, len(ENTRIES) - 1) == ENTRIES
    assert pool.fetches > 10  # the stream, not one window, served it
    assert pool.peak_bytes <= 3 * RANGE
    handle.close()
    assert pool.charged_bytes == 0
    pool.close()


def test_readers_beyond_the_budget_still_progress_and_the_pool_stays_bounded(store: MemoryDriver) -> None:
    pool = ReadAheadPool(total_bytes=2 * RANGE, reader_bytes=2 * RANGE, range_size=RANGE)
    offloader = BlobStoreLedgerOffloader(store, read_buffer_size=512, read_ahead=pool)
    handles = [offloader.read_offloaded(1, UUID) for _ in range(4)]
    results: list[list[bytes]] = [[] for _ in handles]

    def consume(number: int) -> None:
        results[number] = read_all(handles[number], len(ENTRIES) - 1, batch=10 + number)

    threads = [threading.Thread(target=consume, args=(n,)) for n in range(len(handles))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result == ENTRIES for result in results)
    # Read-ahead is admitted only within the budget; what a reader needs
    # to make progress (the range its next entry starts in and the one it
    # runs into) is admitted on top of it.
    assert pool.peak_bytes <= 2 * RANGE + 2 * len(handles) * RANGE
    for handle in handles:
        handle.close()
    assert pool.charged_bytes == 0
    pool.close()


def test_a_seek_cancels_what_was_read_ahead(store: MemoryDriver) -> None:
    # One worker and 50 ms a request: the ranges asked ahead queue behind
    # each other, so all but the one running are still waiting at the seek.
    slow = SlowDriver(store, 0.05)
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=16 * RANGE, range_size=RANGE, workers=1)
    offloader = BlobStoreLedgerOffloader(slow, read_buffer_size=512, read_ahead=pool)
    handle = offloader.read_offloaded(1, UUID)
    handle.read(0, 9)
    reads_before = offloader.requests.requests["read"]
    handle.read(10, 19)  # sequential: the stream starts, 16 ranges asked for (the first one partly)
    assert 15 * RANGE < pool.charged_bytes <= 16 * RANGE
    assert handle.read(2500, 2500)[0].data == ENTRIES[2500]  # a seek: the stream is dropped first
    pool.close()
    assert settled(pool) == 0
    # The range the reader needed, at most one more running at the seek,
    # and the seek's own window reached the store; the others never did.
    assert offloader.requests.requests["read"] - reads_before <= 3
    assert handle.read(2501, 2501)[0].data == ENTRIES[2501]


def test_close_cancels_read_ahead_and_frees_the_budget(store: MemoryDriver) -> None:
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=16 * RANGE, range_size=RANGE, workers=2)
    offloader = BlobStoreLedgerOffloader(store, read_buffer_size=512, read_ahead=pool)
    handle = offloader.read_offloaded(1, UUID)
    handle.read(0, 9)
    handle.read(10, 19)
    assert pool.charged_bytes > 0
    handle.close()
    pool.close()
    assert settled(pool) == 0


def test_concurrent_readers_of_one_range_share_its_download(store: MemoryDriver) -> None:
    gate = Gate()
    slow = SlowDriver(store, 0.0, sleep=gate)
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=4 * RANGE, range_size=RANGE)
    offloader = BlobStoreLedgerOffloader(slow, read_buffer_size=512, read_ahead=pool)
    alone = offloader.read_offloaded(1, UUID)
    alone.read(0, 99)
    fetches_before = pool.fetches
    alone.read(100, 119)
    one_stream = pool.fetches - fetches_before  # what one reader fetches for these entries
    alone.close()
    first, second = offloader.read_offloaded(1, UUID), offloader.read_offloaded(1, UUID)
    for handle in (first, second):
        handle.read(0, 99)
    gate.open.clear()
    fetches_before = pool.fetches
    results: list[list[bytes]] = [[], []]

    def follow(number: int, handle: object) -> None:
        results[number] = [e.data for e in handle.read(100, 119)]  # type: ignore[attr-defined]

    threads = [threading.Thread(target=follow, args=pair) for pair in enumerate((first, second))]
    for thread in threads:
        thread.start()
    # Until both readers hold every range asked for (none can arrive yet):
    # each range held twice, and nothing more asked for over 20 polls.
    seen, steady = (0, 0), 0
    for _ in range(2000):
        now = (pool.ranges, pool.holds)
        steady = steady + 1 if now == seen else 0
        seen = now
        if steady >= 20 and now[0] and now[1] == 2 * now[0]:
            break
        threading.Event().wait(0.005)
    gate.open.set()
    for thread in threads:
        thread.join()
    assert results == [ENTRIES[100:120], ENTRIES[100:120]]
    # Both streams start at the same entry, so they ask for the same
    # aligned ranges while the first downloads are held: each is fetched once.
    assert one_stream > 1
    assert pool.fetches - fetches_before == one_stream
    first.close()
    second.close()
    pool.close()


class FailingAhead(FaultyDriver):
    """Reads of ``key`` from byte ``offset`` on fail while ``failing`` is set."""

    def __init__(self, inner: MemoryDriver, key: str, offset: int) -> None:
        super().__init__(inner, [])
        self.key, self.offset, self.failing, self.failed = key, offset, True, 0

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        if self.failing and key == self.key and start >= self.offset:
            self.failed += 1
            raise InjectedFault(f"read of {key!r} at {start}")
        return super()._read(key, start, end)


def test_a_range_that_failed_ahead_of_the_reader_is_read_again_by_it(store: MemoryDriver) -> None:
    """A range read ahead while the store was failing is not the reader's
    error once the store has recovered: before, the reader got the stale one."""
    failing = FailingAhead(store, v1.data_key(str(UUID), 1), RANGE)
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=2 * RANGE, range_size=RANGE, workers=1)
    handle = BlobStoreLedgerOffloader(failing, read_buffer_size=512, read_ahead=pool).read_offloaded(1, UUID)
    read = [e.data for first in range(0, 32, 8) for e in handle.read(first, first + 7)]  # a sequential reader,
    assert read == ENTRIES[:32]  # and what lies ahead of it, past the first range, is read ahead and fails
    for _ in range(500):
        if failing.failed:
            break
        threading.Event().wait(0.01)
    assert failing.failed
    failing.failing = False  # the store recovers before the reader gets there
    last = len(ENTRIES) - 1
    read += [e.data for first in range(32, last + 1, 37) for e in handle.read(first, min(first + 36, last))]
    assert read == ENTRIES
    pool.close()


def test_a_failed_range_reaches_the_reader_and_a_new_read_recovers(store: MemoryDriver) -> None:
    data_key = v1.data_key(str(UUID), 1)
    faulty = FaultyDriver(store, [Fault("read", key=data_key, nth=3, permanent=True, times=None)])
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=2 * RANGE, range_size=RANGE, workers=1)
    handle = BlobStoreLedgerOffloader(faulty, read_buffer_size=512, read_ahead=pool).read_offloaded(1, UUID)
    with pytest.raises(InjectedFault):  # failing still when the reader asks again
        read_all(handle, len(ENTRIES) - 1)
    faulty.faults.clear()
    fresh = BlobStoreLedgerOffloader(faulty, read_buffer_size=512, read_ahead=pool).read_offloaded(1, UUID)
    assert read_all(fresh, len(ENTRIES) - 1) == ENTRIES
    pool.close()


def test_a_cold_random_read_is_one_get_with_entry_offsets_and_a_walk_without() -> None:
    store = MemoryDriver()
    with_section = BlobStoreLedgerOffloader(store, max_block_size=64 * 1024, read_buffer_size=256)
    with_section.offload(InMemoryReadHandle(1, ENTRIES), UUID)
    without = BlobStoreLedgerOffloader(store, max_block_size=64 * 1024, read_buffer_size=256, entry_offsets=False)
    without.offload(InMemoryReadHandle(2, ENTRIES), UUID)
    for entry_id in random.Random(2).sample(range(len(ENTRIES)), 40):
        for ledger_id, offloader, most in ((1, with_section, 1), (2, without, None)):
            handle = offloader.read_offloaded(ledger_id, UUID)
            before = offloader.requests.requests["read"]
            assert handle.read(entry_id, entry_id)[0].data == ENTRIES[entry_id]
            gets = offloader.requests.requests["read"] - before
            assert gets == most if most is not None else gets >= 1
    # A Pulsar-written index (no section) and ours are read side by side
    # by one reader: the same entries either way.
    for ledger_id, offloader in ((1, with_section), (2, without)):
        assert read_all(offloader.read_offloaded(ledger_id, UUID), len(ENTRIES) - 1) == ENTRIES


def test_a_damaged_entry_offsets_section_costs_speed_not_data(store: MemoryDriver) -> None:
    key = v1.index_key(str(UUID), 1)
    index = v1.decode_index(store.read(key))
    lengths = entry_offsets.decode_section(index.trailer)
    wrong = [list(lengths.block_lengths(n)) for n in range(lengths.block_count)]
    wrong[0] = wrong[0][:-1]  # one entry too few: the block table disagrees
    for trailer in (entry_offsets.encode_section(wrong), index.trailer[:-1] + bytes([index.trailer[-1] ^ 1])):
        damaged = v1.Index(index.data_object_length, index.ledger_metadata, index.entries, trailer=trailer)
        store.write(key, v1.encode_index(damaged), metadata={v1.FORMAT_VERSION_KEY: "1"})
        handle = BlobStoreLedgerOffloader(store, read_buffer_size=512).read_offloaded(1, UUID)
        assert [handle.read(n, n)[0].data for n in (2999, 5, 1500)] == [ENTRIES[2999], ENTRIES[5], ENTRIES[1500]]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"total_bytes": 0}, "total bytes must be a positive integer"),
        ({"range_size": 2**20, "reader_bytes": 2**19}, "at least one range"),
        ({"workers": True}, "workers must be a positive integer"),
    ],
)
def test_pool_settings_are_checked(options: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ReadAheadPool(**options)


def interleaved_gets(store: MemoryDriver, readers: int) -> tuple[int, list[bytes], list[bytes]]:
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=4 * RANGE, range_size=RANGE)
    offloader = BlobStoreLedgerOffloader(store, read_buffer_size=512, read_ahead=pool)
    handle = offloader.read_offloaded(1, UUID)
    handle.readers = readers
    before = offloader.requests.requests["read"]
    low: list[bytes] = []
    high: list[bytes] = []
    for batch in range(50):  # two subscriptions taking turns on one shared handle
        low += [e.data for e in handle.read(batch * 20, batch * 20 + 19)]
        high += [e.data for e in handle.read(1500 + batch * 20, 1500 + batch * 20 + 19)]
    gets = offloader.requests.requests["read"] - before
    handle.close()
    pool.close()
    return gets, low, high


def test_a_shared_handle_keeps_one_stream_per_reader(store: MemoryDriver) -> None:
    shared_gets, low, high = interleaved_gets(store, readers=2)
    assert low == ENTRIES[:1000] and high == ENTRIES[1500:2500]
    single_gets, low, high = interleaved_gets(store, readers=1)
    assert low == ENTRIES[:1000] and high == ENTRIES[1500:2500]
    # Followed as one reader, each turn looks like a seek: a fresh window per read.
    assert single_gets >= 100
    assert shared_gets < single_gets / 2


def test_a_reader_near_a_segments_end_has_the_next_segment_read_ahead() -> None:
    from offload_core import Event
    from offload_core.model import Entry
    from offload_core.offload import SegmentLimits
    from offload_core.offload.segments.segmented_read_handle import LedgerSegment, SegmentedReadHandle
    from tests.offload.test_streaming_offload import offer_all

    store = MemoryDriver()
    limits = SegmentLimits(streaming_block_size=2048, max_segment_size=1 << 30, max_buffer_size=1 << 20)
    writer = BlobStoreLedgerOffloader(store, max_block_size=2048)
    parts = []
    for number, first in enumerate(range(0, 900, 300)):
        uid = str(uuid.UUID(int=100 + number))
        handle = writer.streaming_offload(uid, limits=limits)
        offer_all(handle, [Entry(8, n, ENTRIES[n]) for n in range(first, first + 300)])
        handle.close()
        assert handle.result(10) is not None
        parts.append(LedgerSegment(uid, first, first + 299))
    events: list[Event] = []
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=4 * RANGE, range_size=RANGE)
    reader = BlobStoreLedgerOffloader(store, read_buffer_size=512, read_ahead=pool, emit=events.append)

    def open_part(part: LedgerSegment) -> object:
        return reader.read_segment(part.uuid, 8, last_entry_id=part.last_entry_id)

    ledger = SegmentedReadHandle(8, parts, sum(map(len, ENTRIES[:900])), open_part)  # type: ignore[arg-type]

    def data_reads(uid: str) -> int:
        return sum(1 for e in events if e.kind == "storage.request" and e.fields["op"] == "read"
                   and e.fields["key"] == uid)  # fmt: skip

    got: list[bytes] = []
    for first in range(0, 900, 25):
        if first == 300:
            # Nothing of the second segment was asked for yet, but it is being read.
            assert data_reads(parts[1].uuid) > 0
        got += [e.data for e in ledger.read(first, first + 24)]
    assert got == ENTRIES[:900]
    assert data_reads(parts[2].uuid) > 0
    ledger.close()
    pool.close()


def test_a_pool_closed_under_a_reader_leaves_it_reading(store: MemoryDriver) -> None:
    # One worker at 10 ms a request: most ranges read ahead are still queued when the pool closes.
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=16 * RANGE, range_size=RANGE, workers=1)
    offloader = BlobStoreLedgerOffloader(SlowDriver(store, 0.01), read_buffer_size=512, read_ahead=pool)
    handle = offloader.read_offloaded(1, UUID)
    handle.read(0, 9)
    handle.read(10, 19)
    pool.close()  # cancels the queued downloads the handle still holds
    got = [e.data for first in range(20, 3000, 200) for e in handle.read(first, min(first + 199, 2999))]
    assert got == ENTRIES[20:]


def test_readers_stopping_at_the_same_entry_leave_no_stream_behind(store: MemoryDriver) -> None:
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=2 * RANGE, range_size=RANGE)
    handle = BlobStoreLedgerOffloader(store, read_buffer_size=512, read_ahead=pool).read_offloaded(1, UUID)
    handle.readers = 2
    for first in range(0, 2000, 20):  # two subscriptions in step: each read ends where the other's does
        for _ in range(2):
            assert [e.data for e in handle.read(first, first + 19)] == ENTRIES[first : first + 20]
    # At most two cursors, each with one reader's allowance (and a range it needed): nothing else held.
    bound = 2 * (2 * RANGE + RANGE)
    for _ in range(500):
        if pool.charged_bytes <= bound:
            break
        threading.Event().wait(0.01)
    assert pool.charged_bytes <= bound
    handle.close()
    assert settled(pool) == 0
    pool.close()
