"""The pipe between a broker and its segment worker process
(:mod:`~offload_core.managed_ledger.streaming.segment_workers`): calls answered in
any order, messages sent with no answer awaited, and what the worker
tells the broker unasked (buffer room, a segment's status or stall, its
events, its questions about ledgers)."""

from __future__ import annotations

import itertools
import logging
import pickle
import select
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol

from ...errors import OffloadError, StateError
from ...hooks import Event
from ..workers.worker_processes import WorkerLauncher, picklable

__all__ = ["LinkedSegment", "WorkerDied", "WorkerLink"]

log = logging.getLogger(__name__)


class LinkedSegment(Protocol):
    """What the link needs of a segment whose messages from the worker it
    routes (a :class:`~.segment_workers.RemoteSegment`)."""

    uuid: str
    segment_id: int
    stalled: bool
    on_room: Callable[[], None]
    on_status: Callable[[Any], None]
    on_stall: Callable[[Any, str], None]

    def set_status(self, status: Any) -> None: ...

    def ledger_info(self, ledger_id: int, last_entry_id: int) -> bytes: ...


class WorkerDied(OffloadError):
    """The segment worker process died under a call."""


class WorkerLink:
    """One worker process and the pipe to it. Calls are answered in any
    order; a thread of the link's own receives the answers, the worker's
    buffer-room notices, its events and its questions about ledgers.
    Starting it raises :class:`~.worker_processes.WorkersUnavailable` if
    the worker cannot start."""

    def __init__(self, emit: Callable[[Event], None], launcher: WorkerLauncher) -> None:
        self._process = launcher.start("segments")
        self._conn = self._process.conn
        self.pid = self._process.pid
        self._emit = emit
        self._send_lock = threading.Lock()
        self._pending: dict[int, Future[Any]] = {}
        self._segments: dict[int, LinkedSegment] = {}
        self._calls = itertools.count()
        self.dead = False
        self._receiver = threading.Thread(target=self._receive, name="offload-core-segments-link", daemon=True)
        self._receiver.start()

    def call(self, segment: LinkedSegment | None, op: str, *args: Any) -> Any:
        """Run ``op`` on ``segment`` in the worker (``None``: on no segment);
        :class:`WorkerDied` if the worker is gone or dies before it answers."""
        future: Future[Any] = Future()
        with self._send_lock:
            if self.dead:
                what = "" if segment is None else f"; segment {segment.uuid} is retried"
                raise WorkerDied(f"the segment worker process died{what}")
            call_id = next(self._calls)
            self._pending[call_id] = future
            if segment is not None:
                self._segments[segment.segment_id] = segment
            try:
                self._conn.send(("call", call_id, 0 if segment is None else segment.segment_id, op, args))
            except OSError as exc:
                # The worker is gone and the receiving thread has not seen the
                # pipe's end yet (on a loaded machine it may not have run since).
                del self._pending[call_id]
                what = "" if segment is None else f"; segment {segment.uuid} is retried"
                raise WorkerDied(f"the segment worker process died{what} ({exc})") from None
        return future.result()

    def forget(self, segment: LinkedSegment) -> None:
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
                # Pickled here rather than by Connection.send, whose pickler
                # is set up anew for every message: this runs on a producer's thread.
                self._conn.send_bytes(pickle.dumps(message, pickle.HIGHEST_PROTOCOL))
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
            future.set_exception(WorkerDied("the segment worker process died; its open segments are retried"))

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
        """Stop the worker (quiet if it died) and wait for the receiving thread."""
        self.send(("stop",))
        self._process.ended()
        self._receiver.join(30)  # it sees the pipe's end once the worker is gone
        self._process.close()
