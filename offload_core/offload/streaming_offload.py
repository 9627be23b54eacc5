"""PIP-76: streaming entries into a segment as they are written.

An :class:`OffloadHandle` takes entries of consecutive ledgers in order
(``offer_entry``), groups them into v2 blocks and uploads the segment's
data object as one multipart write, one part per block, while entries are
still being offered; closing the segment (by size, by age, or on request)
finishes that write and then writes the index. Memory is bounded by
``max_buffer_size``: finished blocks waiting for the upload and the block
being filled count against it, and an offer that would pass it is refused
with ``FAIL_BUFFER_FULL`` (the caller offers it again later; the managed
ledger reads it back from the hot tier then).

The upload runs on a thread of the handle's own: a multipart write stays
open for the segment's whole life (up to its rollover time), which would
pin a thread of the broker's small background pool for that long.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, wait

from ..errors import OffloadError, StateError
from ..formats import entry_offsets
from ..formats import pulsar_v1 as v1
from ..formats import pulsar_v2 as v2
from ..hooks import Event
from ..model import Entry, ObjectInfo
from ..retry import RetryPolicy, call_with_retries
from ..storage import StorageDriver
from .segment_types import (
    LedgerInfoSource,
    OfferResult,
    SegmentLedgerRange,
    SegmentLimits,
    StreamingOffloadResult,
    entry_runs,
)

log = logging.getLogger(__name__)

__all__ = [
    "LedgerInfoSource",
    "OfferResult",
    "OffloadHandle",
    "SegmentLedgerRange",
    "SegmentLimits",
    "StreamingOffloadResult",
]


_DEFAULT_RETRY = RetryPolicy()


class OffloadHandle:
    """One segment being streamed (PIP-76's ``OffloadHandle``).

    Thread-safe. ``offer_entry`` never waits on the store. Entries must
    follow each other: the next id of the same ledger, or the first entry
    offered of a later ledger. :meth:`result` waits for the upload and
    returns the segment (``None`` for a segment closed before any entry:
    nothing is written), or raises the upload's error, after removing both
    objects. :meth:`abort` stops the upload and removes what it wrote.
    ``on_room`` is called (on the upload thread) each time a sent part
    leaves the buffer, so a caller refused with ``FAIL_BUFFER_FULL`` knows
    when to offer again; it must not block.
    """

    def __init__(
        self,
        driver: StorageDriver,
        uuid: str,
        *,
        prefix: str,
        limits: SegmentLimits,
        object_metadata: Mapping[str, str],
        driver_metadata: Mapping[str, str],
        ledger_info: LedgerInfoSource | None = None,
        clock: Callable[[], float] = time.monotonic,
        retry: RetryPolicy = _DEFAULT_RETRY,
        emit: Callable[[Event], None] | None = None,
        on_room: Callable[[], None] | None = None,
        entry_offsets: bool = True,
    ) -> None:
        self.uuid = uuid
        self.data_key = prefix + v2.segment_data_key(uuid)
        self.index_key = prefix + v2.segment_index_key(uuid)
        self.entry_offsets_key = prefix + v2.segment_entry_offsets_key(uuid) if entry_offsets else None
        self.limits = limits
        self._driver = driver
        self._object_metadata = dict(object_metadata)
        self._driver_metadata = dict(driver_metadata)
        self._ledger_info = ledger_info or _open_ledger_info
        self._clock = clock
        self._retry = retry
        self._emit = emit
        self._on_room = on_room
        self._opened_at = clock()
        self._grouper = v2.BlockGrouper(limits.streaming_block_size)
        self._ranges: list[SegmentLedgerRange] = []  # finished runs; the current one is in the three below
        self._last_ledger = -1
        self._first_entry = 0
        self._last_entry = -1
        self._rows: list[tuple[int, v2.SegmentRow]] = []
        self._lengths: list[Sequence[int]] = []
        self._queue: deque[bytes] = deque()
        self._queued_bytes = 0
        self._in_flight = 0
        self._open_block_bytes = 0
        self._peak_buffered = 0
        self._closed = False
        self._aborted = False
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._done = threading.Event()
        self._result: StreamingOffloadResult | None = None
        self._offsets_written: Future[ObjectInfo] | None = None
        self._error: BaseException | None = None
        self._uploader = threading.Thread(target=self._upload, name=f"offload-core-segment-{uuid}", daemon=True)
        self._uploader.start()

    # -- offering ------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether the segment takes no more entries."""
        with self._lock:
            return self._closed

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for the upload now (finished blocks, the part being
        sent, the block being filled)."""
        with self._lock:
            return self._buffered()

    @property
    def peak_buffered_bytes(self) -> int:
        """The most :attr:`buffered_bytes` has been."""
        with self._lock:
            return self._peak_buffered

    def can_offer(self, size: int) -> bool:
        """Whether an entry of ``size`` bytes would be taken now."""
        with self._lock:
            self._close_if_due()
            if self._closed:
                return False
            needed = v1.ENTRY_HEADER_LENGTH + size + (0 if self._open_block_bytes else v1.BLOCK_HEADER_LENGTH)
            return self._buffered() + needed <= self.limits.max_buffer_size or not (self._queue or self._in_flight)

    def offer_entry(self, entry: Entry) -> OfferResult:
        """Add ``entry`` to the segment, or say why not."""
        return self.offer_entries((entry,))[1]

    def offer_entries(self, entries: Sequence[Entry]) -> tuple[int, OfferResult]:
        """Add ``entries`` in order, as many as are taken: how many, and
        ``SUCCESS`` or why the next one was not (as :meth:`offer_entry`)."""
        with self._lock:
            self._close_if_due()
            taken = 0
            if not entries:
                return 0, OfferResult.SUCCESS
            # One pass in C over the batch (an Entry is a tuple) for all three.
            ledger_ids, entry_ids, payloads = zip(*entries, strict=True)
            for start, end in entry_runs(ledger_ids, entry_ids):
                count, result = self._offer_run(ledger_ids[start], entry_ids[start], payloads[start:end])
                taken += count
                if result is not OfferResult.SUCCESS:
                    return taken, result
            return taken, OfferResult.SUCCESS

    def offer_run(
        self, ledger_id: int, first_entry_id: int, payloads: Sequence[bytes | memoryview]
    ) -> tuple[int, OfferResult]:
        """Add consecutive entries of one ledger (ids from ``first_entry_id``)
        without an :class:`Entry` each, as :meth:`offer_entries` would."""
        with self._lock:
            self._close_if_due()
            return self._offer_run(ledger_id, first_entry_id, payloads)

    def _offer_run(
        self, ledger_id: int, first_entry_id: int, payloads: Sequence[bytes | memoryview]
    ) -> tuple[int, OfferResult]:
        if self._closed:
            return 0, OfferResult.FAIL_SEGMENT_CLOSED
        if not payloads:
            return 0, OfferResult.SUCCESS
        continues = ledger_id == self._last_ledger and first_entry_id == self._last_entry + 1
        if not continues and not self._starts_ledger(ledger_id, first_entry_id):
            return 0, OfferResult.FAIL_NOT_CONSECUTIVE
        limits = self.limits
        # An entry larger than the room left is still taken when nothing
        # waits for the upload: the block being filled could never close.
        taken, blocks = self._grouper.add_run(
            ledger_id, first_entry_id, payloads, room=limits.max_buffer_size - self._buffered(),
            fill_open_block=not (self._queue or self._in_flight), stop_at=limits.max_segment_size,
        )  # fmt: skip
        if not taken:
            return 0, OfferResult.FAIL_BUFFER_FULL
        if not continues:
            self._begin_range(ledger_id, first_entry_id)
        self._last_entry = first_entry_id + taken - 1
        for block in blocks:
            self._enqueue(block)
        self._open_block_bytes = self._grouper.open_block_bytes
        buffered = self._buffered()
        if buffered > self._peak_buffered:
            self._peak_buffered = buffered
        if self._grouper.offset + self._open_block_bytes >= limits.max_segment_size:
            self._close()
        if taken == len(payloads):
            return taken, OfferResult.SUCCESS
        return taken, OfferResult.FAIL_SEGMENT_CLOSED if self._closed else OfferResult.FAIL_BUFFER_FULL

    def last_offered(self) -> tuple[int, int] | None:
        """``(ledger id, entry id)`` of the last entry taken, if any."""
        with self._lock:
            return (self._last_ledger, self._last_entry) if self._last_ledger >= 0 else None

    def close_if_due(self) -> bool:
        """Close the segment if it has reached its rollover age; whether it is closed."""
        with self._lock:
            self._close_if_due()
            return self._closed

    def close(self) -> None:
        """Take no more entries; the upload finishes in the background."""
        with self._lock:
            self._close()

    def result(self, timeout: float | None = None) -> StreamingOffloadResult | None:
        """Wait for the segment to be closed and durable. Raises
        :class:`StateError` if ``timeout`` runs out, or the upload's error."""
        if not self._done.wait(timeout):
            raise StateError(f"segment {self.uuid} is still being uploaded after {timeout}s")
        if self._error is not None:
            raise self._error
        return self._result

    def done(self) -> bool:
        return self._done.is_set()

    def abort(self) -> None:
        """Stop: no more entries, the upload is cancelled and its objects removed."""
        with self._lock:
            self._aborted = self._closed = True
            self._changed.notify_all()
        self._done.wait()

    def _starts_ledger(self, ledger_id: int, entry_id: int) -> bool:
        """Whether entry ``ledger_id:entry_id`` may begin a run: the
        segment's first entry, or the first entry of a later ledger."""
        if self._last_ledger < 0:
            return ledger_id >= 0 and entry_id >= 0
        return ledger_id > self._last_ledger and entry_id == 0

    def _begin_range(self, ledger_id: int, entry_id: int) -> None:
        if self._last_ledger >= 0:
            self._ranges.append(SegmentLedgerRange(self._last_ledger, self._first_entry, self._last_entry))
        self._last_ledger, self._first_entry, self._last_entry = ledger_id, entry_id, entry_id

    def _all_ranges(self) -> tuple[SegmentLedgerRange, ...]:
        current = (SegmentLedgerRange(self._last_ledger, self._first_entry, self._last_entry),)
        return tuple(self._ranges) + current if self._last_ledger >= 0 else ()

    def _buffered(self) -> int:
        return self._queued_bytes + self._in_flight + self._open_block_bytes

    def _enqueue(self, block: v2.EncodedSegmentBlock) -> None:
        self._rows.append((block.ledger_id, block.row))
        if self.entry_offsets_key is not None:
            self._lengths.append(block.entry_lengths)
        self._queue.append(block.data)
        self._queued_bytes += len(block.data)
        self._changed.notify_all()

    def _close_if_due(self) -> None:
        if not self._closed and self._clock() - self._opened_at >= self.limits.max_segment_age:
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        last = self._grouper.finish()
        if last is not None:
            self._enqueue(last)
        self._open_block_bytes = 0
        self._closed = True
        if self._rows:
            self._start_entry_offsets()
        self._changed.notify_all()

    # -- uploading -----------------------------------------------------------

    def _next_block(self) -> bytes | None:
        """The next block to upload (``None``: the segment is complete),
        releasing the previous one from the buffer count."""
        if self._in_flight and self._on_room is not None:
            try:
                self._on_room()  # the part just sent left the buffer: the offering side may go on
            except Exception as exc:  # the caller's notification must not fail the upload
                log.warning("segment %s: the buffer-room callback failed: %s", self.uuid, exc)
        with self._lock:
            self._in_flight = 0
            self._changed.wait_for(lambda: bool(self._queue) or self._closed)
            if self._aborted:
                raise _Aborted(f"segment {self.uuid} was aborted")
            if not self._queue:
                return None
            block = self._queue.popleft()
            self._queued_bytes -= len(block)
            self._in_flight = len(block)
            return block

    def _parts(self, first: bytes) -> Iterator[bytes]:
        yield first
        while (block := self._next_block()) is not None:
            yield block

    def _start_entry_offsets(self) -> None:
        """Under the lock, as the segment closes: every entry's length is
        known, so the entry offsets are written on a thread of their own
        while the upload sends the last blocks and makes the data object
        durable. The index waits for both: a segment with an index has its
        entry offsets complete, or none."""
        key = self.entry_offsets_key
        if key is None:
            return
        lengths = list(self._lengths)
        written: Future[ObjectInfo] = Future()
        self._offsets_written = written

        def write() -> None:
            try:
                section = entry_offsets.encode_section(lengths)
                written.set_result(self._driver.write(key, section, metadata=self._object_metadata))
            except BaseException as exc:
                written.set_exception(exc)

        threading.Thread(target=write, name=f"offload-core-offsets-{self.uuid}", daemon=True).start()

    def _upload(self) -> None:
        try:
            first = self._next_block()
            if first is None:
                return
            self._event("offload.started", uuid=self.uuid, key=self.data_key)
            info = self._driver.write(self.data_key, self._parts(first), metadata=self._object_metadata)
            if self._offsets_written is not None:
                self._offsets_written.result()
            with self._lock:
                rows, ranges = list(self._rows), self._all_ranges()
            index = v2.index_for_blocks(
                rows,
                data_object_length=info.size,
                ledger_infos={r.ledger_id: self._ledger_info(r.ledger_id, r.last_entry_id) for r in ranges},
            )
            self._driver.write(self.index_key, v2.encode_index(index), metadata=self._object_metadata)
            self._result = StreamingOffloadResult(
                uuid=self.uuid,
                begin_ledger_id=ranges[0].ledger_id,
                begin_entry_id=ranges[0].first_entry_id,
                end_ledger_id=ranges[-1].ledger_id,
                end_entry_id=ranges[-1].last_entry_id,
                ledgers=ranges,
                blocks=len(rows),
                data_object_length=info.size,
                data_key=self.data_key,
                index_key=self.index_key,
                driver_metadata=self._driver_metadata,
            )
            self._event("offload.finished", uuid=self.uuid, bytes=info.size, blocks=len(rows))
        except BaseException as exc:
            self._error = exc
            with self._lock:
                # Closed first: a close racing this failure cannot start
                # the entry offsets' write after the wait below.
                self._closed = True
                self._queue.clear()
                self._queued_bytes = self._in_flight = self._open_block_bytes = 0
            if self._offsets_written is not None:
                wait([self._offsets_written])  # or it could write its object after the cleanup
            self._remove_quietly(exc)
            self._event("offload.failed", uuid=self.uuid, error=type(exc).__name__)
        finally:
            with self._lock:
                self._in_flight = 0
            self._done.set()

    def _remove_quietly(self, cause: BaseException) -> None:
        keys = [self.data_key, self.index_key, *([self.entry_offsets_key] if self.entry_offsets_key else [])]
        try:
            call_with_retries(lambda: self._driver.delete(keys), self._retry)
        except OffloadError as exc:
            cause.add_note(f"cleanup after the failed segment {self.uuid} also failed ({exc}); delete {keys} by hand")

    def _event(self, kind: str, **fields: object) -> None:
        if self._emit is not None:
            self._emit(Event(kind, {"streaming": True, **fields}))


class _Aborted(StateError):
    """The segment's upload was cancelled."""


def _open_ledger_info(ledger_id: int, last_entry_id: int) -> bytes:
    return v2.ledger_info_bytes(ledger_id, last_entry_id=last_entry_id, closed=False)
