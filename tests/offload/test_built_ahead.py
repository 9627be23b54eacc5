"""BuiltAhead: the next block is built on a thread of its own, at most one
ahead of the caller, and the source is never used after close."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle
from offload_core.errors import TransientStorageError
from offload_core.memory import MemoryDriver
from offload_core.model import Entry, ObjectInfo
from offload_core.offload.ledgers.built_ahead import BuiltAhead
from offload_core.retry import RetryPolicy
from offload_core.storage import BytesLike


class Source:
    """Counts what it built and which threads built it."""

    def __init__(self, count: int, fail_at: int | None = None) -> None:
        self.count, self.fail_at = count, fail_at
        self.built: list[int] = []
        self.threads: set[int] = set()
        self.closed = threading.Event()
        self.built_one = threading.Event()

    def __iter__(self) -> Iterator[bytes]:
        try:
            for n in range(self.count):
                self.threads.add(threading.get_ident())
                if n == self.fail_at:
                    raise ValueError(f"entry {n} is bad")
                self.built.append(n)
                if n == 1:
                    self.built_one.set()
                yield bytes([n]) * 3
        finally:
            self.closed.set()


def test_every_item_in_order_from_one_other_thread() -> None:
    source = Source(50)
    with BuiltAhead(iter(source), name="test") as ahead:
        assert list(ahead) == [bytes([n]) * 3 for n in range(50)]
        assert next(ahead, None) is None
    assert source.threads and threading.get_ident() not in source.threads and len(source.threads) == 1
    assert source.closed.is_set()


def test_an_error_of_the_source_comes_out_on_the_callers_thread_after_what_came_before() -> None:
    source = Source(10, fail_at=4)
    got = []
    with BuiltAhead(iter(source), name="test") as ahead, pytest.raises(ValueError, match="entry 4 is bad"):
        for item in ahead:
            got.append(item[0])
    assert got == [0, 1, 2, 3]
    assert source.closed.is_set()


def test_it_builds_one_ahead_and_no_further_then_close_stops_and_closes_the_source() -> None:
    source = Source(100)
    ahead = BuiltAhead(iter(source), name="test")
    assert next(ahead) == b"\x00" * 3
    # Item 1 is built while the caller holds item 0; item 2 waits until
    # item 1 is taken.
    assert source.built_one.wait(10)
    ahead.close()
    assert source.built == [0, 1]
    assert source.closed.is_set()  # closed before close() returned
    assert next(ahead, None) is None
    ahead.close()  # twice is fine


def test_closing_before_anything_is_taken_leaves_the_source_closed() -> None:
    source = Source(5)
    BuiltAhead(iter(source), name="test").close()
    assert source.closed.is_set() and len(source.built) <= 1


class WatchedHandle(InMemoryReadHandle):
    """Records the entry ranges read and signals when ``watch_id`` is read."""

    def __init__(self, entries: list[bytes], watch_id: int) -> None:
        super().__init__(7, entries)
        self.watch_id = watch_id
        self.watched = threading.Event()
        self.reads: list[tuple[int, int]] = []

    def read(self, first: int, last: int) -> list[Entry]:
        self.reads.append((first, last))
        if first <= self.watch_id <= last:
            self.watched.set()
        return super().read(first, last)


class WaitsOnFirstPart(MemoryDriver):
    """Holds the first part of each data object until ``ready`` is set (or
    gives up and says so), then fails on the part ``fail_at`` if given."""

    def __init__(self, ready: threading.Event, fail_at: int | None = None) -> None:
        super().__init__()
        self.ready, self.fail_at = ready, fail_at
        self.saw_next_block_framed: bool | None = None

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        def watched() -> Iterator[BytesLike]:
            for number, part in enumerate(parts, start=1):
                if number == 1 and not key.endswith("-index"):
                    self.saw_next_block_framed = self.ready.wait(30)
                if number == self.fail_at:
                    raise TransientStorageError(f"part {number} of {key!r} refused")
                yield part

        return super()._write(key, watched(), metadata, if_absent)


def test_the_offload_reads_the_next_block_while_the_current_one_is_written() -> None:
    entries = [bytes([n % 251]) * 1000 for n in range(40)]
    handle = WatchedHandle(entries, watch_id=10)  # 7 entries a block: entry 10 is in the second
    driver = WaitsOnFirstPart(handle.watched)
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=8192, read_buffer_size=1024)
    result = offloader.offload(handle, "c0ffee00-0000-0000-0000-000000000000")
    assert driver.saw_next_block_framed is True
    reader = offloader.read_offloaded(7, result.uuid)
    assert [e.data for e in reader.read(0, 39)] == entries


def test_a_failed_write_leaves_the_handle_unread_once_the_offload_has_raised() -> None:
    entries = [bytes([n % 251]) * 1000 for n in range(200)]
    handle = WatchedHandle(entries, watch_id=10)
    driver = WaitsOnFirstPart(handle.watched, fail_at=2)
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=8192, read_buffer_size=1024,
                                         retry=RetryPolicy(attempts=1))  # fmt: skip
    with pytest.raises(TransientStorageError):
        offloader.offload(handle, "c0ffee00-0000-0000-0000-000000000001")
    reads = len(handle.reads)
    assert handle.reads[-1][1] < 199  # stopped early, not read to the end
    threading.Event().wait(0.05)
    assert len(handle.reads) == reads  # nothing reads it after offload() raised
    assert list(driver.list("")) == []  # and nothing of it is left in the store
