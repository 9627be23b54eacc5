"""PIP-76: streaming entries into a segment as they are written.

An :class:`OffloadHandle` takes entries of consecutive ledgers in order
(``offer_entry``), groups them into v2 blocks and uploads the segment's
data object as one multipart write, one part per block, while entries are
still being offered; closing the segment (by size, by age, or on request)
finishes that write and then writes the index. Memory is bounded by
``max_buffer_size``: finished blocks waiting for the upload and the block
being filled count against it, and an offer that would pass it is refused
with ``FAIL_BUFFER_FULL`` (the caller offers it again later; the managed
ledger reads it back from the hot tier then). The upload itself is a
:class:`~.segment_upload.SegmentUpload`, on a thread of its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence

from ...formats import pulsar_v1 as v1
from ...formats import pulsar_v2 as v2
from ...hooks import Event
from ...model import Entry
from ...retry import RetryPolicy
from ...storage import StorageDriver
from .segment_types import (
    LedgerInfoSource,
    OfferResult,
    SegmentLedgerRange,
    SegmentLimits,
    StreamingOffloadResult,
    entry_runs,
)
from .segment_upload import SegmentKeys, SegmentUpload

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
        keys = SegmentKeys(
            data=prefix + v2.segment_data_key(uuid),
            index=prefix + v2.segment_index_key(uuid),
            entry_offsets=entry_offsets,
        )
        self.data_key, self.index_key = keys.data, keys.index
        self.limits = limits
        self._clock = clock
        self._opened_at = clock()
        self._grouper = v2.BlockGrouper(limits.streaming_block_size)
        self._ranges: list[SegmentLedgerRange] = []  # finished runs; the current one is in the three below
        self._last_ledger = -1
        self._first_entry = 0
        self._last_entry = -1
        self._open_block_bytes = 0
        self._peak_buffered = 0
        self._closed = False
        self._lock = threading.Lock()
        self._upload = SegmentUpload(
            driver, uuid, keys=keys, lock=self._lock, object_metadata=object_metadata,
            driver_metadata=driver_metadata, ledger_info=ledger_info or _open_ledger_info, retry=retry, emit=emit,
            on_room=on_room, on_failure=self._stop_taking,
        )  # fmt: skip

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
            return self._buffered() + needed <= self.limits.max_buffer_size or not self._upload.busy

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
            fill_open_block=not self._upload.busy, stop_at=limits.max_segment_size,
        )  # fmt: skip
        if not taken:
            return 0, OfferResult.FAIL_BUFFER_FULL
        if not continues:
            self._begin_range(ledger_id, first_entry_id)
        self._last_entry = first_entry_id + taken - 1
        for block in blocks:
            self._upload.put(block)
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
        return self._upload.result(timeout)

    def done(self) -> bool:
        return self._upload.done()

    def abort(self) -> None:
        """Stop: no more entries, the upload is cancelled and its objects removed."""
        with self._lock:
            self._closed = True
            self._upload.abort()
        self._upload.wait()

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
        return self._upload.buffered_bytes() + self._open_block_bytes

    def _close_if_due(self) -> None:
        if not self._closed and self._clock() - self._opened_at >= self.limits.max_segment_age:
            self._close()

    def _close(self) -> None:
        if self._closed:
            return
        last = self._grouper.finish()
        if last is not None:
            self._upload.put(last)
        self._open_block_bytes = 0
        self._closed = True
        self._upload.complete(self._all_ranges())

    def _stop_taking(self) -> None:
        """The upload failed or was aborted (with the lock held): no more
        entries, and the open block is dropped from the buffer count with
        the rest."""
        self._closed = True
        self._open_block_bytes = 0


def _open_ledger_info(ledger_id: int, last_entry_id: int) -> bytes:
    return v2.ledger_info_bytes(ledger_id, last_entry_id=last_entry_id, closed=False)
