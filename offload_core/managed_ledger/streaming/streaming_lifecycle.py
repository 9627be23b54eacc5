"""PIP-76 streaming offload of a managed ledger, on the broker's background
threads (the same machinery as threshold offload).

Appends only request a *pump*. The pump reads the entries not yet in a
segment from the hot tier (so memory never holds more than the segment's
bounded buffer; a producer faster than the store just leaves the pump
behind, to catch up from the files) and offers them to the open segment.
A segment closes at its size or age, on request, or when streaming is
switched off; then its metadata is completed and the next one starts.

Metadata is Pulsar's: per ledger, ``OffloadContext.offloadSegment``
entries (uid, complete, assigned/offloaded timestamps, end entry id,
driver metadata), updated with compare-and-set. A ledger's entry is
*assigned* before its first entry is offered, so no object exists that the
metadata does not name; *complete* once the segment is durable. A sealed
ledger whose every entry is in complete segments is marked offloaded
(``OffloadContext.complete``), and from then on reads, the deletion lag and
retention treat it like a ledger offloaded whole. A failed upload leaves
its segment *failed*: it is retried from the hot tier under the same uid,
and no other segment starts meanwhile. After a crash, assigned segments
are deleted and streaming resumes after the last complete one.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import uuid as uuid_module
from collections.abc import Callable

from ...errors import ConfigError, OffloadError, StateError
from ...formats import pulsar_v2 as v2
from ...model import Position
from ...offload.ledger import StreamingOffloader
from ...offload.segments.room_notices import RoomNotices
from ...offload.segments.streaming_offload import OfferResult, SegmentLimits
from ..lifecycle.ledger_records import OffloadStatus
from ..lifecycle.policies import OffloadPolicies
from ..workers.worker_processes import WorkersUnavailable
from .segment_records import (
    SegmentState,
    assign_segment,
    complete_segment,
    fully_streamed,
    mark_streamed_ledgers,
    streamed_end,
)
from .segment_workers import RemoteSegment, SegmentOpening, SegmentWorkers
from .stream_triggers import StreamTriggers

__all__ = ["SegmentState", "StreamingLifecycle"]

log = logging.getLogger(__name__)


class StreamingLifecycle(StreamTriggers):
    """Streaming offload (PIP-76) of one managed ledger."""

    _segment_workers: SegmentWorkers | None
    _segment_room: RoomNotices | None
    _segment_uid: uuid_module.UUID | None
    _segment_settings: dict[str, str]
    _segment_start: Position | None
    _segment_ledgers: set[int]
    _segment_error: str | None
    _stream_lock: threading.Lock
    _stream_again: bool
    _store_status: Callable[[OffloadStatus], None]
    delete_hot_copies_past_lag: Callable[[], list[int]]

    def _init_streaming(self) -> None:
        self._leftover_segments_possible = True  # until the first cleaning (at open) has run
        self._fully_streamed_possible = True
        self._segment = None
        self._segment_uid = None
        self._segment_room = None
        self._segment_settings = {}
        self._segment_start = None
        self._segment_ledgers = set()
        self._segment_error = None
        self._stream_next = Position(0, 0)
        self._stream_lock = threading.Lock()
        self._stream_again = False
        self._init_triggers()

    # -- the pump ----------------------------------------------------------------

    def pump_streaming(self) -> int:
        """Offer every entry not yet in a segment (as far as the segment's
        buffer allows), closing and completing segments as they fill; a
        no-op when streaming is off and no segment is open. Returns how
        many entries were offered. Another pump running meanwhile picks this
        request up when it finishes."""
        with self._stream_flag_lock:
            self._stream_pending = False
        offered = 0
        self._stream_again = True
        while self._stream_again:
            if not self._stream_lock.acquire(blocking=False):
                return offered
            try:
                self._stream_again = False
                offered += self._pump_once()
            finally:
                self._stream_lock.release()
        return offered

    def complete_current_segment(self, timeout: float = 600) -> OffloadStatus:
        """Stream what is not in a segment yet, then close the open segment
        and wait until it is durable and its metadata complete (``offload
        topics offload`` with streaming on). Returns the outcome (stored for
        ``offload-status``): ``success`` and the first entry not offloaded,
        or ``error`` naming the failed segment (it is retried)."""
        if not self._stream_lock.acquire(timeout=timeout):
            raise StateError(f"{self.name}: the streaming offload did not let go within {timeout}s")
        try:
            before = self._offloaded_count()
            self._pump_once(settle=True)
            completed = self._segment_error is None
            if self._segment is not None:
                self._segment.close()
                completed = self._finish_segment()
            self._mark_fully_streamed()
        finally:
            self._stream_lock.release()
        if not completed:
            status = OffloadStatus("error", self._stream_next, 0, f"segment {self._segment_uid}: {self._segment_error}")
        else:
            status = OffloadStatus("success", self._first_unstreamed(), self._offloaded_count() - before)
        self._store_status(status)
        return status

    def _offloaded_count(self) -> int:
        with self._lock:
            return sum(1 for ledger in self._info.ledgerInfo if ledger.offloadContext.complete)

    def _first_unstreamed(self) -> Position | None:
        with self._lock:
            for ledger in self._info.ledgerInfo:
                if not ledger.offloadContext.complete:
                    return Position(ledger.ledgerId, streamed_end(ledger.offloadContext) + 1)
        return None

    def _pump_once(self, *, settle: bool = False) -> int:
        """Offer what was written up to now (see :meth:`pump_streaming`).
        With ``settle``, pipelined offers are known taken when it returns
        (a round trip to the worker): for a caller about to close the
        segment. Without, a pump leaves a dropped one to the pump its
        stall notice requests, and waits for no answer."""
        policies = self.policies()
        if not policies.streaming_enabled:
            # Switching off completes the open segment; ledgers streamed so far stay readable.
            if self._segment is not None:
                self._segment.close()
                self._finish_segment()
            if self._segment is None and self._segment_uid is not None:
                self._forget_failed_segment()  # not retried any more: its ledgers offload whole from now on
            return 0
        self._clean_assigned_segments()
        offered = 0
        horizon = self._stream_horizon()
        pipelined = True  # until an offer of this pump's is dropped: then synchronously, to hear why
        while True:
            if self._segment is not None and self._segment.close_if_due() and not self._finish_segment():
                return offered
            if self._pipelined_segment() is None and self._resync_pipelined():
                pipelined = False  # a stall met meanwhile: go on from the last entry taken
            records = self._next_stream_records(horizon)
            if records is None:
                if settle and self._resync_pipelined():
                    pipelined = False
                    continue
                self._mark_fully_streamed()
                return offered
            ledger_id, first = records.ledger_id, records.first
            try:
                if self._segment is None:
                    self._open_segment(policies)
                if ledger_id not in self._segment_ledgers:
                    self._assign(ledger_id)
            except BaseException:
                records.close()
                raise
            segment = self._segment
            assert segment is not None
            if isinstance(segment, RemoteSegment):
                offer = self._offer_remote(segment, records, pipelined)  # the worker reads them
                if offer is None:
                    pipelined = False
                    continue
                taken, result = offer
            else:
                assert self._segment_room is not None
                taken, result = self._segment_room.offer(functools.partial(segment.offer_run, ledger_id, first,
                                                                           records.payloads()))  # fmt: skip
            offered += taken
            self._emit_buffer(segment)  # per batch offered (about a megabyte), for the gauge
            if taken:
                self._stream_next = Position(ledger_id, first + taken)
            if result is OfferResult.FAIL_BUFFER_FULL:
                return offered  # the upload calls back when a part has left the buffer
            if result is OfferResult.FAIL_NOT_CONSECUTIVE:
                raise StateError(f"{self.name}: entry {ledger_id}:{first + taken} does not follow the "
                                 f"segment's last ({segment.last_offered()}); this is a bug")  # fmt: skip
            if segment.closed and not self._finish_segment():
                return offered
            if horizon == Position(ledger_id, first + taken - 1):  # all there was when the pump started
                if settle and self._resync_pipelined():
                    pipelined = False
                    continue
                self._mark_fully_streamed()
                return offered

    # -- segments ----------------------------------------------------------------

    def _open_segment(self, policies: OffloadPolicies) -> None:
        offloader, settings = self._offloaders.for_policies(policies)
        if not isinstance(offloader, StreamingOffloader):
            raise ConfigError(
                f"the offloader for driver {settings.get('driver')!r} ({type(offloader).__name__}) cannot stream "
                "segments; turn managedLedgerOffloadStreamingEnabled off for this topic or use the blobstore offloader"
            )
        assert policies.max_block_size and policies.segment_max_size_mb and policies.segment_rollover_minutes
        assert policies.streaming_buffer_bytes is not None
        limits = SegmentLimits(
            streaming_block_size=policies.max_block_size,
            max_segment_size=policies.segment_max_size_mb << 20,
            max_segment_age=policies.segment_rollover_minutes * 60.0,
            max_buffer_size=policies.streaming_buffer_bytes,
        )
        if self._segment_uid is None:  # a retry keeps the failed attempt's uid
            self._segment_uid = uuid_module.uuid4()
            self._segment_settings = dict(settings)
            self._segment_start = self._stream_next
        uid, workers = self._segment_uid, self._segment_workers
        if workers is not None and workers.can_stream(self._segment_settings):
            assert policies.read_buffer_size is not None
            opening = SegmentOpening(
                str(uid), tuple(sorted(self._segment_settings.items())), workers.data_dir, workers.entry_offsets,
                policies.max_block_size, policies.read_buffer_size, limits,
            )  # fmt: skip
            with contextlib.suppress(WorkersUnavailable):  # logged once by the launcher: streamed here instead
                self._segment = workers.open(
                    opening, ledger_info=self._segment_ledger_info, on_room=self._segment_has_room,
                    on_status=self._segment_reported, on_stall=self._segment_stalled, clock=self._clock,
                    delete=functools.partial(offloader.delete_segment, uid, dict(self._segment_settings)),
                )  # fmt: skip
        if self._segment is None:  # not opened in a worker (and none was open before)
            self._segment_room = RoomNotices(self._segment_has_room)
            self._segment = offloader.streaming_offload(
                uid, self._segment_settings, limits=limits, ledger_info=self._segment_ledger_info,
                clock=self._clock, on_room=self._segment_room.part_sent,
            )  # fmt: skip
        self._emit_segment("opened")

    def _segment_ledger_info(self, ledger_id: int, last_entry_id: int) -> bytes:
        """Pulsar's LedgerInfo for the segment index: closed form for a
        sealed ledger, open form (entries up to the segment's last) else."""
        with self._lock:
            ledger = self._ledgers_by_id.get(ledger_id)
            if ledger is None or not ledger.HasField("entries"):
                return v2.ledger_info_bytes(ledger_id, last_entry_id=last_entry_id, closed=False)
            return v2.ledger_info_bytes(ledger_id, last_entry_id=last_entry_id, closed=True,
                                        entries=int(ledger.entries), size=int(ledger.size),
                                        timestamp_ms=int(ledger.timestamp))  # fmt: skip

    def _assign(self, ledger_id: int) -> None:
        """Record ledger ``ledger_id`` in the open segment (``complete=false``)
        before its first entry is offered."""
        uid, settings, now = self._segment_uid, self._segment_settings, self._now_ms()
        assert uid is not None
        self._update(lambda info: assign_segment(info, ledger_id, uid, now, settings))
        self._segment_ledgers.add(ledger_id)

    def _finish_segment(self) -> bool:
        """Wait for the closed segment; complete its metadata (true), or
        mark it failed for a retry from its first entry (false)."""
        handle, uid = self._segment, self._segment_uid
        assert handle is not None and uid is not None
        handle.close()
        self._resync_pipelined()  # so the next segment starts after the last entry this one took
        try:
            result = handle.result()
        except Exception as exc:
            self._segment = None
            self._segment_error = f"{type(exc).__name__}: {exc}"
            if self._segment_start is not None:
                self._stream_next = self._segment_start
            log.warning("segment %s of %s failed (retried from the hot tier): %s", uid, self.name, exc)
            self._emit_segment("failed", error=self._segment_error)
            return False
        ends = {r.ledger_id: r.last_entry_id for r in result.ledgers} if result is not None else {}
        now = self._now_ms()
        self._update(lambda info: complete_segment(info, uid, ends, now))
        if result is not None and not self._segment_referenced(uid):
            self._delete_segment_quietly(uid, self._segment_settings)  # every ledger in it was trimmed meanwhile
        self._segment = self._segment_uid = self._segment_start = self._segment_error = None
        self._segment_ledgers = set()
        self._fully_streamed_possible = True
        self._emit_segment("completed", uuid=str(uid), ledgers=len(ends))
        if not self._stream_closing:  # ledgers just marked offloaded may be past the deletion lag already
            self._schedule(f"hot-copy deletion of {self.name}", self.delete_hot_copies_past_lag)
        return True

    def _mark_fully_streamed(self) -> None:
        """Mark offloaded the sealed ledgers whose every entry is in a
        complete segment. Only a segment completing or a ledger sealing can
        make one so; between those, the scan (of every ledger, under the
        ledger's lock) is skipped."""
        if not self._fully_streamed_possible:
            return
        self._fully_streamed_possible = False
        try:
            with self._lock:
                due = any(fully_streamed(ledger) for ledger in self._info.ledgerInfo)
            if due:
                now = self._now_ms()
                self._update(lambda info: mark_streamed_ledgers(info, now))
        except BaseException:
            self._fully_streamed_possible = True
            raise

    def _close_streaming(self) -> None:
        """At close: complete the open segment (a failure leaves it for the
        next open to clean up)."""
        self._stream_closing = True
        if not (self._streaming_on or self._segment is not None) or not self._stream_lock.acquire(timeout=600):
            return
        try:
            self._pump_once(settle=True)  # what appends left waiting goes in first
            if self._segment is not None:
                self._segment.close()
                self._finish_segment()
        except OffloadError as exc:
            log.warning("completing the open segment of %s at close failed (cleaned up at the next open): %s",
                        self.name, exc)  # fmt: skip
        finally:
            self._stream_lock.release()
