"""When a streamed topic's pump runs (part of the streaming lifecycle).

Appends only request a pump, and not each of them: one every 4 MB or
every second (each request costs the producer an append that takes a
hundred microseconds or more), at once for a sealed ledger. What a
producer appends within a second of the last request is not left for the
next append or the periodic maintenance (120 s by default) to find: the
first append that does not request a pump defers one to the second's end.
Room in a full segment buffer requests one too, once per refusal.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .stream_pipelining import StreamPipelining

__all__ = ["StreamTriggers"]

# How often an append looks the streaming policy up again.
_POLICY_RECHECK_SECONDS = 1.0
# Appended bytes that make a pump (or the producer's pipelined offers)
# worth the trouble before a second has passed.
_PUMP_AFTER_BYTES = 4 << 20
# The most time between appends and a pump for them.
_PUMP_AFTER_SECONDS = 1.0


class StreamTriggers(StreamPipelining):
    """Requests for the pump: from appends, seals, room and the deferral."""

    _inline_schedule: bool
    _lock: threading.RLock
    _schedule_after: Callable[[float, str, Callable[[], object]], None] | None
    _stream_flag_lock: threading.Lock
    _stream_pending: bool
    _stream_deferred: bool
    _streaming_on: bool
    _streaming_checked: float
    _stream_closing: bool
    _stream_waiting: int
    _stream_requested: float
    _fully_streamed_possible: bool
    pump_streaming: Callable[[], int]

    def _init_triggers(self) -> None:
        self._stream_flag_lock = threading.Lock()
        self._stream_pending = False
        self._stream_deferred = False
        self._streaming_on = False
        self._streaming_checked = float("-inf")
        self._stream_closing = False
        self._stream_waiting = 0
        self._stream_requested = float("-inf")

    def _stream_if_enabled(self, appended: int = 0, *, sealed: bool = False) -> None:
        """After an append of ``appended`` bytes or a seal (under the ledger
        lock): request a pump if streaming is on and enough is waiting (4 MB,
        a second's worth, or a sealed ledger), else make sure one comes by
        the second's end. Cheap: the policy is looked up once a second."""
        if sealed:
            self._fully_streamed_possible = True
        now = self._clock()
        if not now - self._streaming_checked < _POLICY_RECHECK_SECONDS:
            self._streaming_checked = now
            self._streaming_on = bool(self.policies().streaming_enabled)
        if not (self._streaming_on or self._segment is not None):
            return
        self._stream_waiting += appended
        since = now - self._stream_requested
        if sealed or self._stream_waiting >= _PUMP_AFTER_BYTES or not since < _PUMP_AFTER_SECONDS:
            self._stream_waiting = 0
            self._stream_requested = now
            if sealed:
                if self._sealed_streamed():
                    return
            elif self._stream_pipelined():
                return
            self._request_pump()
        elif not self._stream_deferred and self._schedule_after is not None:
            self._stream_deferred = True
            self._schedule_after(_PUMP_AFTER_SECONDS - since, f"deferred streaming of {self.name}",
                                 self._deferred_pump)  # fmt: skip

    def _deferred_pump(self) -> None:
        # What an append a second later would have done: the producer's
        # way into a worker's segment where it can, else a pump.
        with self._lock:
            self._stream_deferred = False
            self._stream_waiting = 0
            self._stream_requested = self._clock()
            if self._stream_pipelined():
                return
            horizon = self._stream_horizon()
            if horizon is None or self._stream_next > horizon:
                return  # a seal's flush offered them meanwhile
        self.pump_streaming()

    def _request_pump(self) -> None:
        with self._stream_flag_lock:
            if self._stream_pending:
                return
            self._stream_pending = True
        self._schedule(f"streaming offload of {self.name}", self.pump_streaming)

    def _segment_has_room(self) -> None:
        # Once room came after a refusal, on the upload thread (or the
        # pump's own, when it came while the refused offer ran): only ever
        # hand the pump to the background threads, never run it here, and
        # not once closing has begun (the broker's threads are gone by then).
        if not self._inline_schedule and not self._stream_closing:
            self._request_pump()
