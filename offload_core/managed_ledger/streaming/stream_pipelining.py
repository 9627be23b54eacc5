"""The producer's short way into a segment streamed by a worker process.

A pump on the broker's background threads takes the interpreter several
times per batch it offers (woken, planning, the answer's round trip
through the link's thread), and every time it does, a producer of the
same process waits its turn: measured, that was most of what streaming
added to the producer's p99 append latency (bench/README.md). So while a
segment lives in a worker and takes the ledger being written, the append
that completes 4 MB (or a second) of entries hands them to the worker
itself: it locates them in the hot-tier file (it holds the ledger's lock
already) and sends their :class:`RecordSpan` s without waiting for an
answer (pipelined offers). The append that creates a ledger records it in
the open segment in the same metadata update, so no pump is needed to
assign it either.

Pipelined offers change nothing the pump relies on: the worker drops
every pipelined offer after one it could not take whole and tells the
broker (the segment *stalls*); the pump that this requests asks the
worker which entry the segment took last (a resync) and offers again
from the next, synchronously for the rest of that pump. An offer taken
whole that fills the segment is reported at once too, and the pump this
requests completes the segment. A pump pipelines its own offers too,
and resyncs before it closes a segment or offers synchronously.
Everything needing a decision (a segment to open, close or complete, a
ledger to assign that is not the new one, a failure) is still the
pump's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from ...hooks import Event
from ...model import Position
from ...offload.segments.streaming_offload import OfferResult, OffloadHandle
from ...proto import ManagedLedgerInfo
from ..hot.hot_records import DetachedRecords
from .segment_records import assign_segment
from .segment_workers import RemoteSegment
from .stream_planning import StreamPlanning

__all__ = ["StreamPipelining"]


class StreamPipelining(StreamPlanning):
    """Pipelined offers from the producer's thread (part of the streaming lifecycle)."""

    _segment: OffloadHandle | RemoteSegment | None
    _stream_lock: threading.Lock
    _streaming_on: bool
    _segment_has_room: Callable[[], None]

    def _pipelined_segment(self) -> RemoteSegment | None:
        """Under the ledger's lock and the streaming lock: the open segment
        if pipelined offers may go to it."""
        segment = self._segment
        if not self._streaming_on or not isinstance(segment, RemoteSegment) or not segment.takes_pipelined():
            return None  # switched off: the pump completes the segment
        return segment

    def _stream_pipelined(self) -> bool:
        """Under the ledger's lock, on the producer's thread: send the
        current ledger's entries not yet offered to the worker's open
        segment. True if every entry written is now offered; false (the
        caller requests a pump) if this cannot be done here: no such
        segment, the pump running, older entries waiting, a ledger not in
        the segment, or the worker gone."""
        current = self._current
        if current is None or self._pipelined_segment() is None or not self._stream_lock.acquire(blocking=False):
            return False
        try:
            segment = self._pipelined_segment()  # again: the pump may have changed it before letting go
            if segment is None:
                return False
            horizon = Position(current.ledger_id, current.last_entry_id)
            planned_from, spans = self._stream_next, []
            while (step := self._next_stream_step(horizon)) is not None:
                ledger_id, first, last = step
                if ledger_id != current.ledger_id or ledger_id not in self._segment_ledgers:
                    break
                spans.append(current.span(first, last))
                self._stream_next = Position(ledger_id, last + 1)
            else:
                if not spans or segment.send_records(spans):
                    return True
            self._stream_next = planned_from  # nothing was sent
            return False
        finally:
            self._stream_lock.release()

    def _sealed_streamed(self) -> bool:
        """After a seal: whether the pump has nothing to do for it (every
        entry of the sealed ledger went to the open segment, which marks
        the ledger offloaded when it completes)."""
        if not self._ledger_ids or not self._stream_lock.acquire(blocking=False):
            return False  # a pump runs: it looks again when it is done
        try:
            ledger_id = self._ledger_ids[-1]
            return (
                ledger_id in self._segment_ledgers
                and self._pipelined_segment() is not None
                and self._stream_next == Position(ledger_id, int(self._ledgers_by_id[ledger_id].entries))
            )
        finally:
            self._stream_lock.release()

    def _flush_before_seal(self) -> None:
        """Under the ledger's lock, before the current ledger is sealed:
        offer its last entries the producer's way if streaming goes on."""
        self._stream_pipelined()

    def _create_in_open_segment(self, ledger_id: int, create: Callable[[ManagedLedgerInfo], None]) -> bool:
        """Under the ledger's lock: create ledger ``ledger_id`` and record
        it in the open segment in one metadata update (then the producer's
        pipelined offers take its entries from the first). False, with
        nothing done, when pipelined offers cannot go to the open segment
        or the pump is running (it assigns the ledger later, as always)."""
        if self._pipelined_segment() is None or not self._stream_lock.acquire(blocking=False):
            return False
        try:
            if self._pipelined_segment() is None:
                return False
            uid, settings, now = self._segment_uid, self._segment_settings, self._now_ms()
            assert uid is not None

            def create_and_assign(info: ManagedLedgerInfo) -> None:
                create(info)
                assign_segment(info, ledger_id, uid, now, settings)

            self._update(create_and_assign)
            self._segment_ledgers.add(ledger_id)
            return True
        finally:
            self._stream_lock.release()

    def _resync_pipelined(self) -> bool:
        """Under the streaming lock, before the pump offers synchronously
        or decides it is done: if pipelined offers went to the open
        segment, learn from the worker which entry it took last and go on
        from the next. True if that is before where offers had got to
        (some were dropped)."""
        segment = self._segment
        if not isinstance(segment, RemoteSegment) or not segment.unsynced:
            return False
        sent_up_to = self._stream_next
        last = segment.sync()
        if last is not None:
            self._stream_next = Position(last[0], last[1] + 1)
        elif self._segment_start is not None:
            self._stream_next = self._segment_start
        return self._stream_next != sent_up_to

    def _offer_remote(
        self, segment: RemoteSegment, records: DetachedRecords, pipelined: bool
    ) -> tuple[int, OfferResult] | None:
        """The pump's offer to a segment in the worker: pipelined if
        ``pipelined`` and the segment takes them (a pump catching up with
        a producer then waits for no answers and leaves the producer the
        interpreter), else synchronous. ``None`` if pipelined offers went
        before and were dropped: the pump resynced, and plans again."""
        if pipelined and segment.takes_pipelined() and segment.send_records((records.span,)):
            records.close()
            return records.span.last - records.span.first + 1, OfferResult.SUCCESS
        if segment.unsynced and self._resync_pipelined():
            records.close()
            return None
        return segment.offer_records(records)

    def _segment_stalled(self, segment: RemoteSegment, why: str) -> None:
        # On the link's thread: a pipelined offer was not taken whole.
        self._emit_buffer(segment)
        if why != OfferResult.FAIL_BUFFER_FULL.value:  # a full buffer waits for the room notice
            self._segment_has_room()

    def _segment_reported(self, segment: RemoteSegment) -> None:
        # On the link's thread: the worker's status after pipelined offers.
        # One that closed the segment at its size was taken whole, so no
        # stall notice follows: the pump this requests completes it.
        self._emit_buffer(segment)
        if segment.closed:
            self._segment_has_room()

    def _emit_buffer(self, segment: OffloadHandle | RemoteSegment) -> None:
        """The buffer-occupancy gauge's event."""
        self._emit(Event("streaming.buffer", {"managed_ledger": self.name, "uuid": segment.uuid,
                                              "buffered_bytes": segment.buffered_bytes,
                                              "limit": segment.limits.max_buffer_size}))  # fmt: skip
