"""Streaming segments (PIP-76) from a worker process.

Reading a batch of entries from the hot tier, checking their checksums and
framing them into blocks is Python work that holds the interpreter lock;
on a broker thread it makes every producer of the process wait its turn
(see bench/README.md). With workers on, a segment lives in a worker
process: the broker's pump only locates each batch in the hot-tier file
(:class:`~offload_core.managed_ledger.hot.ledger_file.RecordSpan`, a few
numbers) and the worker reads, checks, frames and uploads it. The
segment's metadata stays with the broker: the worker asks it for each
ledger's ``LedgerInfo`` when it writes the index, tells it when the buffer
has room again, and sends back the events it emits.

A worker that dies fails its open segments (the broker deletes their
objects; the managed ledger retries them from the hot tier, as any failed
upload) and the next segment starts a fresh worker.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import OffloadError
from ...hooks import Event
from ...offload.segments.segment_types import LedgerInfoSource, OfferResult, SegmentLimits, StreamingOffloadResult
from ..hot.hot_records import DetachedRecords, RecordSpan
from ..lifecycle.offload_workers import reachable_from_workers
from ..workers.worker_processes import WorkerLauncher
from .segment_worker_link import WorkerDied, WorkerLink

__all__ = ["RemoteSegment", "SegmentOpening", "SegmentWorkers"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SegmentOpening:
    """What a worker needs to open a segment. Small and picklable."""

    uuid: str
    settings: tuple[tuple[str, str], ...]
    data_dir: str
    entry_offsets: bool
    max_block_size: int
    read_buffer_size: int
    limits: SegmentLimits


@dataclass(frozen=True)
class SegmentStatus:
    """The worker's segment after a call (what the broker may ask between calls)."""

    closed: bool
    buffered_bytes: int
    peak_buffered_bytes: int
    last_offered: tuple[int, int] | None
    seq: int = 0  # the worker's order: a status never replaces a newer one


class SegmentWorkers:
    """One worker process streaming the segments of a broker's managed
    ledgers, started (by ``launcher``) on first use and again after it
    died. Owned by the broker: :meth:`close` stops it."""

    def __init__(
        self, emit: Callable[[Event], None], launcher: WorkerLauncher, *, data_dir: str, entry_offsets: bool
    ) -> None:
        self._emit = emit
        self._launcher = launcher
        self.data_dir = data_dir
        self.entry_offsets = entry_offsets
        self._link: WorkerLink | None = None
        self._lock = threading.Lock()

    def can_stream(self, settings: Mapping[str, str]) -> bool:
        """Whether a worker can stream to the store ``settings`` name: it
        can reach it, and worker processes can start (as far as is known)."""
        return self._launcher.available and reachable_from_workers(settings)

    def open(
        self,
        opening: SegmentOpening,
        *,
        ledger_info: LedgerInfoSource,
        on_room: Callable[[], None],
        on_status: Callable[[RemoteSegment], None],
        on_stall: Callable[[RemoteSegment, str], None],
        clock: Callable[[], float],
        delete: Callable[[], None],
    ) -> RemoteSegment:
        """Open a segment in the worker. ``delete`` removes the segment's
        objects; it is called if the worker dies under the segment.
        ``on_status`` hears the segment's status between calls, ``on_stall``
        a pipelined offer not taken whole and why (both on the link's thread).
        Raises :class:`~.worker_processes.WorkersUnavailable` if no worker
        can start, :class:`OffloadError` if the worker dies before it opened
        it."""
        link = self._live_link()
        now = clock()
        segment = RemoteSegment(link, opening, ledger_info=ledger_info, on_room=on_room, on_status=on_status,
                                on_stall=on_stall, clock=clock, delete=delete, opened_at=now)  # fmt: skip
        link.call(segment, "open", opening, now)
        return segment

    def start(self) -> int:
        """Start the worker now rather than for the first segment, and wait
        until it serves (a broker that wants no start-up in its first
        segment's latency); returns its process id.
        :class:`~.worker_processes.WorkersUnavailable` if it cannot start,
        :class:`OffloadError` if it dies first."""
        pid: int = self._live_link().call(None, "ping")
        return pid

    def _live_link(self) -> WorkerLink:
        """The running worker's link; a new worker when none runs (or it died)."""
        with self._lock:
            if self._link is not None and self._link.dead:
                self._link.close()  # reaps the dead worker
                self._link = None
            if self._link is None:
                self._link = WorkerLink(self._emit, self._launcher)
            return self._link

    @property
    def process_id(self) -> int | None:
        """The worker's process id, if one runs (for tests and diagnostics)."""
        link = self._link
        return None if link is None or link.dead else link.pid

    def close(self) -> None:
        with self._lock:
            link, self._link = self._link, None
        if link is not None:
            link.close()


class RemoteSegment:
    """A segment streamed by the worker: the subset of
    :class:`~offload_core.offload.segments.streaming_offload.OffloadHandle` the
    managed ledger uses, with :meth:`offer_records` in place of offering
    entries. A worker that dies leaves the segment as a failed upload
    does: closed, offers refused, and :meth:`result` raising
    :class:`OffloadError` (after deleting the segment's objects).

    Offers are synchronous (:meth:`offer_records`) or *pipelined*
    (:meth:`send_records`): sent without waiting for an answer, so a
    producer can hand the worker its entries without the broker's
    threads taking the interpreter for each batch. A pipelined offer not
    taken whole *stalls* the segment in the worker (later ones are
    dropped) and the broker hears why (``on_stall``); :meth:`sync` ends a
    stall and says which entry was taken last, from where the caller
    offers again."""

    def __init__(
        self,
        link: WorkerLink,
        opening: SegmentOpening,
        *,
        ledger_info: LedgerInfoSource,
        on_room: Callable[[], None],
        on_status: Callable[[RemoteSegment], None],
        on_stall: Callable[[RemoteSegment, str], None],
        clock: Callable[[], float],
        delete: Callable[[], None],
        opened_at: float,
    ) -> None:
        self.uuid = opening.uuid
        self.limits = opening.limits
        self.ledger_info = ledger_info
        self.on_room = on_room
        self.on_status = on_status
        self.on_stall = on_stall
        self.stalled = False
        self.unsynced = False
        self._status_lock = threading.Lock()
        self._link = link
        self._clock = clock
        self._delete = delete
        self._opened_at = opened_at
        self._status = SegmentStatus(False, 0, 0, None)
        self._lost: WorkerDied | None = None
        self.segment_id = next(_SEGMENT_IDS)

    @property
    def closed(self) -> bool:
        return self._status.closed

    @property
    def buffered_bytes(self) -> int:
        return self._status.buffered_bytes

    @property
    def peak_buffered_bytes(self) -> int:
        return self._status.peak_buffered_bytes

    def last_offered(self) -> tuple[int, int] | None:
        return self._status.last_offered

    def offer_records(self, records: DetachedRecords) -> tuple[int, OfferResult]:
        """Offer the entries ``records`` locates (the worker reads them
        from the hot-tier file); as ``OffloadHandle.offer_entries``. Call
        :meth:`sync` first if pipelined offers went before."""
        span = records.span
        records.close()
        if self._lost is not None:
            return 0, OfferResult.FAIL_SEGMENT_CLOSED
        try:
            taken, result, status = self._link.call(self, "offer", span, self._clock())
        except WorkerDied as exc:
            self._lose(exc)
            return 0, OfferResult.FAIL_SEGMENT_CLOSED
        self.set_status(status)
        return taken, result

    def takes_pipelined(self) -> bool:
        """Whether a pipelined offer may be sent: the worker lives, the
        segment is open, not stalled and not past its age."""
        return self._lost is None and not self.stalled and not self._status.closed and not self._past_age()

    def _past_age(self) -> bool:
        return self._clock() - self._opened_at >= self.limits.max_segment_age

    def send_records(self, spans: Sequence[RecordSpan]) -> bool:
        """Offer the entries ``spans`` locate (in order, one message)
        without waiting (see the class). Never blocks: false, with nothing
        sent, if the worker is gone, another message is being sent or the
        pipe is full (a worker behind; the caller leaves the entries to a
        pump)."""
        sent = self._link.send_nowait(("offer", self.segment_id, tuple(spans), self._clock()))
        self.unsynced = self.unsynced or sent
        return sent

    def sync(self) -> tuple[int, int] | None:
        """After pipelined offers: end a stall, and return the last entry
        the segment took (``None``: none); the segment's status is then
        current. A dead worker loses the segment, as in every call."""
        self._update("sync", self._clock())
        self.stalled = self.unsynced = False
        return self._status.last_offered

    def set_status(self, status: SegmentStatus) -> None:
        """Take ``status`` from the worker unless a newer one is known
        already (answers and notices arrive on different threads)."""
        with self._status_lock:
            if status.seq >= self._status.seq:
                self._status = status

    def close_if_due(self) -> bool:
        """As ``OffloadHandle.close_if_due``; asks the worker only once the
        segment's age is reached (the worker keeps the broker's clock)."""
        if self._status.closed:
            return True
        if not self._past_age():
            return False
        self._update("close_if_due", self._clock())
        return self._status.closed

    def close(self) -> None:
        self._update("close", self._clock())

    def result(self, timeout: float | None = None) -> StreamingOffloadResult | None:
        """As ``OffloadHandle.result``; if the worker died, the segment's
        objects are deleted here before :class:`OffloadError` is raised."""
        try:
            if self._lost is None:
                try:
                    result: StreamingOffloadResult | None = self._link.call(self, "result", timeout)
                    return result
                except WorkerDied as exc:
                    self._lose(exc)
            assert self._lost is not None
            try:
                self._delete()
            except OffloadError as cleanup:
                self._lost.add_note(
                    f"deleting segment {self.uuid}'s objects failed too ({cleanup}); delete them by hand"
                )
            raise self._lost
        finally:
            self._link.forget(self)

    def _update(self, op: str, *args: Any) -> None:
        """A call that returns the segment's status; a dead worker leaves
        the segment closed and failed, as a failed upload does."""
        if self._lost is None:
            try:
                self.set_status(self._link.call(self, op, *args))
            except WorkerDied as exc:
                self._lose(exc)

    def _lose(self, exc: WorkerDied) -> None:
        self._lost = exc
        with self._status_lock:
            status = self._status
            self._status = SegmentStatus(True, 0, status.peak_buffered_bytes, status.last_offered, status.seq + 1)


_SEGMENT_IDS = itertools.count(1)
