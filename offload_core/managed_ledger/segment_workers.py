"""Streaming segments (PIP-76) from a worker process.

Reading a batch of entries from the hot tier, checking their checksums and
framing them into blocks is Python work that holds the interpreter lock;
on a broker thread it makes every producer of the process wait its turn
(see bench/README.md). With workers on, a segment lives in a worker
process: the broker's pump only locates each batch in the hot-tier file
(:class:`~offload_core.managed_ledger.ledger_file.RecordSpan`, a few
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
import multiprocessing
import pickle
import select
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from ..errors import OffloadError, StateError
from ..hooks import Event
from ..offload.segment_types import LedgerInfoSource, OfferResult, SegmentLimits, StreamingOffloadResult
from .hot_records import DetachedRecords, RecordSpan
from .offload_workers import reachable_from_workers

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
    ledgers, started on first use and again after it died. Owned by the
    broker: :meth:`close` stops it."""

    def __init__(self, emit: Callable[[Event], None], *, data_dir: str, entry_offsets: bool) -> None:
        self._emit = emit
        self.data_dir = data_dir
        self.entry_offsets = entry_offsets
        self._link: _WorkerLink | None = None
        self._lock = threading.Lock()

    @staticmethod
    def can_stream(settings: Mapping[str, str]) -> bool:
        """Whether a worker can reach the store ``settings`` name."""
        return reachable_from_workers(settings)

    def open(
        self,
        opening: SegmentOpening,
        *,
        ledger_info: LedgerInfoSource,
        on_room: Callable[[], None],
        clock: Callable[[], float],
        delete: Callable[[], None],
    ) -> RemoteSegment:
        """Open a segment in the worker. ``delete`` removes the segment's
        objects; it is called if the worker dies under the segment.
        Raises :class:`OffloadError` if the worker dies before it opened it."""
        link = self._live_link()
        now = clock()
        segment = RemoteSegment(link, opening, ledger_info=ledger_info, on_room=on_room, clock=clock, delete=delete,
                                opened_at=now)  # fmt: skip
        link.call(segment, "open", opening, now)
        return segment

    def start(self) -> int:
        """Start the worker now rather than for the first segment, and wait
        until it serves (a broker that wants no start-up in its first
        segment's latency); returns its process id. :class:`OffloadError`
        if it dies first."""
        pid: int = self._live_link().call(None, "ping")
        return pid

    def _live_link(self) -> _WorkerLink:
        """The running worker's link; a new worker when none runs (or it died)."""
        with self._lock:
            if self._link is None or self._link.dead:
                self._link = _WorkerLink(self._emit)
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
    :class:`~offload_core.offload.streaming_offload.OffloadHandle` the
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
        link: _WorkerLink,
        opening: SegmentOpening,
        *,
        ledger_info: LedgerInfoSource,
        on_room: Callable[[], None],
        clock: Callable[[], float],
        delete: Callable[[], None],
        opened_at: float,
    ) -> None:
        self.uuid = opening.uuid
        self.limits = opening.limits
        self.ledger_info = ledger_info
        self.on_room = on_room
        self.on_status: Callable[[RemoteSegment], None] = _ignore
        self.on_stall: Callable[[RemoteSegment, str], None] = _ignore_stall
        self.stalled = False
        self.unsynced = False
        self._status_lock = threading.Lock()
        self._link = link
        self._clock = clock
        self._delete = delete
        self._opened_at = opened_at
        self._status = SegmentStatus(False, 0, 0, None)
        self._lost: _WorkerDied | None = None
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
        except _WorkerDied as exc:
            self._lose(exc)
            return 0, OfferResult.FAIL_SEGMENT_CLOSED
        self.set_status(status)
        return taken, result

    def takes_pipelined(self) -> bool:
        """Whether a pipelined offer may be sent: the worker lives, the
        segment is open, not stalled and not past its age."""
        return (self._lost is None and not self.stalled and not self._status.closed
                and self._clock() - self._opened_at < self.limits.max_segment_age)  # fmt: skip

    def send_records(self, span: RecordSpan) -> bool:
        """Offer the entries ``span`` locates without waiting (see the
        class). Never blocks: false, with nothing sent, if the worker is
        gone, another message is being sent or the pipe is full (a
        worker behind; the caller leaves the entries to a pump)."""
        sent = self._link.send_nowait(("offer", self.segment_id, span, self._clock()))
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
        with self._status_lock:
            if status.seq >= self._status.seq:
                self._status = status

    def close_if_due(self) -> bool:
        """As ``OffloadHandle.close_if_due``; asks the worker only once the
        segment's age is reached (the worker keeps the broker's clock)."""
        if self._status.closed:
            return True
        if self._clock() - self._opened_at < self.limits.max_segment_age:
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
                except _WorkerDied as exc:
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
            except _WorkerDied as exc:
                self._lose(exc)

    def _lose(self, exc: _WorkerDied) -> None:
        self._lost = exc
        with self._status_lock:
            status = self._status
            self._status = SegmentStatus(True, 0, status.peak_buffered_bytes, status.last_offered, status.seq + 1)


def _ignore(segment: RemoteSegment) -> None:
    pass


def _ignore_stall(segment: RemoteSegment, why: str) -> None:
    pass


_SEGMENT_IDS = itertools.count(1)


class _WorkerDied(OffloadError):
    """The segment worker process died under a call."""


class _WorkerLink:
    """One worker process and the pipe to it. Calls are answered in any
    order; a thread of the link's own receives the answers, the worker's
    buffer-room notices, its events and its questions about ledgers."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        from .segment_worker_process import serve_segments

        context = multiprocessing.get_context("spawn")  # not forked: the broker has threads and open files
        self._conn, child = context.Pipe()
        self._process = context.Process(target=serve_segments, args=(child,), name="offload-core-segments",
                                        daemon=True)  # fmt: skip
        self._process.start()
        child.close()
        self.pid = self._process.pid
        self._emit = emit
        self._send_lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._segments: dict[int, RemoteSegment] = {}
        self._calls = itertools.count()
        self.dead = False
        self._receiver = threading.Thread(target=self._receive, name="offload-core-segments-link", daemon=True)
        self._receiver.start()

    def call(self, segment: RemoteSegment | None, op: str, *args: Any) -> Any:
        """Run ``op`` on ``segment`` in the worker (``None``: on no segment)."""
        future: Future[Any] = Future()
        with self._send_lock:
            if self.dead:
                what = "" if segment is None else f"; segment {segment.uuid} is retried"
                raise _WorkerDied(f"the segment worker process died{what}")
            call_id = next(self._calls)
            self._pending[call_id] = future
            if segment is not None:
                self._segments[segment.segment_id] = segment
            self._conn.send(("call", call_id, 0 if segment is None else segment.segment_id, op, args))
        return future.result()

    def forget(self, segment: RemoteSegment) -> None:
        with self._send_lock:
            self._segments.pop(segment.segment_id, None)

    def send(self, message: tuple[Any, ...]) -> bool:
        """Send ``message`` with no answer awaited; false if the worker is gone."""
        with self._send_lock:
            if self.dead:
                return False
            try:
                self._conn.send(message)
            except OSError:
                return False  # the receiver marks the link dead as it sees the pipe's end
            return True

    def send_nowait(self, message: tuple[Any, ...]) -> bool:
        """Send a small ``message`` if that cannot block; false, with
        nothing sent, if it could (or the worker is gone)."""
        if not self._send_lock.acquire(blocking=False):
            return False
        try:
            # A pipe with room for PIPE_BUF bytes takes a message that size whole, at once.
            if self.dead or not select.select([], [self._conn], [], 0)[1]:
                return False
            try:
                self._conn.send(message)
            except OSError:
                return False
            return True
        finally:
            self._send_lock.release()

    def _receive(self) -> None:
        while True:
            try:
                message = self._conn.recv()
            except (EOFError, OSError):
                break
            kind = message[0]
            if kind == "reply":
                _, call_id, value, error = message
                future = self._pending.pop(call_id)
                if error is None:
                    future.set_result(value)
                else:
                    future.set_exception(error)
            elif kind == "room":
                self._notify_room(message[1])
            elif kind in ("status", "stalled"):
                self._notify_status(message)
            elif kind == "event":
                self._emit(message[1])
            elif kind == "ledger_info":
                _, question, segment_id, ledger_id, last_entry_id = message
                self._answer_ledger_info(question, segment_id, ledger_id, last_entry_id)
        with self._send_lock:
            self.dead = True
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(_WorkerDied("the segment worker process died; its open segments are retried"))

    def _notify_room(self, segment_id: int) -> None:
        segment = self._segments.get(segment_id)
        if segment is not None:
            try:
                segment.on_room()
            except Exception as exc:  # a notification must not stop the link
                log.warning("segment %s: the buffer-room callback failed: %s", segment.uuid, exc)

    def _notify_status(self, message: tuple[Any, ...]) -> None:
        segment = self._segments.get(message[1])
        if segment is None:
            return
        segment.set_status(message[-1])
        try:
            if message[0] == "stalled":
                segment.stalled = True
                segment.on_stall(segment, message[2])
            else:
                segment.on_status(segment)
        except Exception as exc:  # a notification must not stop the link
            log.warning("segment %s: the status callback failed: %s", segment.uuid, exc)

    def _answer_ledger_info(self, question: int, segment_id: int, ledger_id: int, last_entry_id: int) -> None:
        segment = self._segments.get(segment_id)
        try:
            if segment is None:
                raise StateError(f"no open segment {segment_id} in this broker")
            self.send(("ledger_info", question, segment.ledger_info(ledger_id, last_entry_id), None))
        except Exception as exc:
            self.send(("ledger_info", question, None, picklable(exc)))

    def close(self) -> None:
        self.send(("stop",))
        self._process.join(30)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._receiver.join(30)  # it sees the pipe's end once the worker is gone
        self._conn.close()


def picklable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else an :class:`OffloadError` saying what it was."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return OffloadError(f"{type(exc).__name__}: {exc}")
    return exc
