"""The worker side of :mod:`~offload_core.managed_ledger.streaming.segment_workers`:
serves the broker's calls on its segments until told to stop or the pipe
closes. Runs in a worker process (:mod:`..worker_main`); loads plugins from
their entry points. Once the broker is gone (killed, say), what the
worker would tell it is dropped, quietly: the worker aborts its segments
and exits."""

from __future__ import annotations

import itertools
import os
import threading
import time
import uuid as uuid_module
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ...errors import StateError
from ...hooks import Event, hookimpl
from ...offload.ledger import StreamingOffloader
from ...offload.segments.room_notices import RoomNotices
from ...offload.segments.streaming_offload import OfferResult, OffloadHandle
from ...plugins import PluginManager
from ..hot.hot_records import RecordSpan
from ..lifecycle.offloaders import OffloaderProvider
from ..workers.worker_processes import picklable
from .segment_workers import SegmentOpening, SegmentStatus

__all__ = ["serve_segments"]

# Calls run on threads: a call waiting for an upload (``result``) must not
# hold up the offers of other segments, nor the answers the upload waits for.
_CALL_THREADS = 8


class _Forward:
    """Sends the events the worker emits to the broker."""

    def __init__(self, send: Any) -> None:
        self._send = send

    @hookimpl
    def offload_core_on_event(self, event: Event) -> None:
        self._send(("event", event))


class _Served:
    """One open segment, the clock the broker lends it, whether the broker
    waits to hear of room in its buffer, and whether pipelined offers are
    taken (see :meth:`offer_pipelined`)."""

    def __init__(self, now: float, notify: Callable[[], None]) -> None:
        self.now = now
        self.handle: OffloadHandle | None = None
        self._room = RoomNotices(notify)
        self.part_sent = self._room.part_sent
        self.stalled = False
        self._status_seq = itertools.count(1)
        self.status_sent = 0.0

    def clock(self) -> float:
        return self.now

    def offer(self, span: RecordSpan) -> tuple[int, OfferResult]:
        """Offer ``span``; the broker hears of room once a part has left
        after a refusal for a full buffer (one message, not one a part)."""
        handle = self.handle
        assert handle is not None
        return self._room.offer(lambda: handle.offer_run(span.ledger_id, span.first, span.read_payloads()))

    def offer_pipelined(self, span: RecordSpan) -> str | None:
        """An offer nobody waits for. Taken whole, it says nothing; else the
        segment *stalls*: this and every later pipelined offer is dropped
        until the broker, told why (returned: what to tell it), resyncs
        with a synchronous call. What was dropped is still in the hot tier,
        and the broker re-offers it from the last entry taken."""
        if self.stalled:
            return None
        try:
            taken, result = self.offer(span)
        except Exception as exc:  # the synchronous offer the broker re-tries will raise it to the pump
            self.stalled = True
            return f"{type(exc).__name__}: {exc}"
        if taken == span.last - span.first + 1:
            return None
        self.stalled = True
        return result.value

    def status(self) -> SegmentStatus:
        handle = self.handle
        assert handle is not None
        return SegmentStatus(handle.closed, handle.buffered_bytes, handle.peak_buffered_bytes, handle.last_offered(),
                             next(self._status_seq))  # fmt: skip


class _Server:
    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._send_lock = threading.Lock()
        self._plugins = PluginManager()
        self._plugins.register(_Forward(self.send))
        self._providers: dict[tuple[str, bool], OffloaderProvider] = {}
        self._segments: dict[int, _Served] = {}
        self._questions: dict[int, Future[bytes]] = {}
        self._question_ids = itertools.count()
        self._lock = threading.Lock()
        self._broker_left = False

    def send(self, message: tuple[Any, ...]) -> None:
        """Send ``message`` to the broker; dropped once the broker left (said
        stop, or is gone: the receiving loop then sees the pipe's end)."""
        with self._send_lock:
            if self._broker_left:
                return
            try:
                self._conn.send(message)
            except OSError:
                self._broker_left = True

    def run(self) -> None:
        with ThreadPoolExecutor(max_workers=_CALL_THREADS, thread_name_prefix="offload-core-segment-call") as calls:
            while True:
                try:
                    message = self._conn.recv()
                except (EOFError, OSError):
                    break
                if message[0] == "stop":
                    break
                if message[0] == "ledger_info":
                    _, question, info, error = message
                    future = self._questions.pop(question)
                    if error is None:
                        future.set_result(info)
                    else:
                        future.set_exception(error)
                elif message[0] == "offer":
                    self._offer_pipelined(*message[1:])
                elif message[0] == "call":
                    calls.submit(self._answer, *message[1:])
            with self._lock:  # no answer will come: uploads waiting for one fail now
                self._broker_left = True
                questions, self._questions = self._questions, {}
            for question in questions.values():
                question.set_exception(StateError("the broker went away before it described the ledger"))
            for served in list(self._segments.values()):
                if served.handle is not None and not served.handle.done():
                    served.handle.abort()  # the broker is gone: what it never completed is cleaned up at its next open
        for provider in self._providers.values():
            provider.close()

    def _answer(self, call_id: int, segment_id: int, op: str, args: tuple[Any, ...]) -> None:
        try:
            value, error = getattr(self, f"_op_{op}")(segment_id, *args), None
        except BaseException as exc:
            value, error = None, picklable(exc)
        self.send(("reply", call_id, value, error))

    def _served(self, segment_id: int) -> tuple[_Served, OffloadHandle]:
        served = self._segments.get(segment_id)
        if served is None or served.handle is None:
            raise StateError(f"the segment worker has no open segment {segment_id}")
        return served, served.handle

    def _op_ping(self, segment_id: int) -> int:
        return os.getpid()

    def _op_open(self, segment_id: int, opening: SegmentOpening, now: float) -> None:
        key = (opening.data_dir, opening.entry_offsets)
        with self._lock:
            provider = self._providers.get(key)
            if provider is None:
                provider = OffloaderProvider(self._plugins, Path(opening.data_dir), self._plugins.emit,
                                             entry_offsets=opening.entry_offsets)  # fmt: skip
                self._providers[key] = provider
        settings = dict(opening.settings)
        offloader = provider.for_settings(
            settings, max_block_size=opening.max_block_size, read_buffer_size=opening.read_buffer_size
        )
        if not isinstance(offloader, StreamingOffloader):
            raise StateError(f"the offloader for driver {settings.get('driver')!r} cannot stream segments")
        served = _Served(now, lambda: self.send(("room", segment_id)))
        served.handle = offloader.streaming_offload(
            uuid_module.UUID(opening.uuid), settings, limits=opening.limits, clock=served.clock,
            ledger_info=lambda ledger_id, last: self._ask_ledger_info(segment_id, ledger_id, last),
            on_room=served.part_sent,
        )  # fmt: skip
        self._segments[segment_id] = served

    def _offer_pipelined(self, segment_id: int, spans: tuple[RecordSpan, ...], now: float) -> None:
        """On the receiving thread, so pipelined offers are taken in the
        order sent and before any call sent after them. The broker hears
        the segment's status at once when an offer was not taken whole or
        closed the segment (taken whole, it reached the segment's size:
        nothing else would tell the broker, which completes the segment
        when it hears), and otherwise at most every :data:`_STATUS_EVERY`
        seconds (for its buffer gauge): each message costs the broker's
        interpreter."""
        served = self._segments.get(segment_id)
        if served is None or served.handle is None:
            return  # the segment was finished meanwhile: the broker's next pump re-offers from its metadata
        served.now = now
        for span in spans:
            stalled = served.offer_pipelined(span)
            if stalled is not None:
                self.send(("stalled", segment_id, stalled, served.status()))
                return  # the rest is dropped: the broker resyncs
        if served.handle.closed or time.monotonic() - served.status_sent >= _STATUS_EVERY:
            served.status_sent = time.monotonic()
            self.send(("status", segment_id, served.status()))

    def _op_offer(self, segment_id: int, span: RecordSpan, now: float) -> tuple[int, Any, SegmentStatus]:
        served, _ = self._served(segment_id)
        served.now = now
        served.stalled = False
        taken, result = served.offer(span)
        return taken, result, served.status()

    def _op_sync(self, segment_id: int, now: float) -> SegmentStatus:
        """The broker resyncs after pipelined offers: pipelined offers are
        taken again, and it learns the last entry taken."""
        served, _ = self._served(segment_id)
        served.now = now
        served.stalled = False
        return served.status()

    def _op_close_if_due(self, segment_id: int, now: float) -> SegmentStatus:
        served, handle = self._served(segment_id)
        served.now = now
        handle.close_if_due()
        return served.status()

    def _op_close(self, segment_id: int, now: float) -> SegmentStatus:
        served, handle = self._served(segment_id)
        served.now = now
        handle.close()
        return served.status()

    def _op_result(self, segment_id: int, timeout: float | None) -> Any:
        _, handle = self._served(segment_id)
        try:
            return handle.result(timeout)
        finally:
            if handle.done():
                self._segments.pop(segment_id, None)

    def _ask_ledger_info(self, segment_id: int, ledger_id: int, last_entry_id: int) -> bytes:
        """Runs on the upload thread: the broker describes the ledger."""
        future: Future[bytes] = Future()
        with self._lock:
            if self._broker_left:
                raise StateError("the broker went away before it described the ledger")
            question = next(self._question_ids)
            self._questions[question] = future
        self.send(("ledger_info", question, segment_id, ledger_id, last_entry_id))
        return future.result(timeout=_LEDGER_INFO_TIMEOUT)


_LEDGER_INFO_TIMEOUT = 120.0
# How often, at most, pipelined offers taken whole report the segment's status.
_STATUS_EVERY = 0.5


def serve_segments(conn: Connection) -> None:
    """The worker process's main loop, until the broker says stop or is gone."""
    _Server(conn).run()
