"""Which entries the streaming pump offers next: runs of one ledger's
entries not yet in a segment, about a megabyte each, up to the pump's
horizon (the last entry written when it started), located in their
hot-tier file under one hold of the ledger's lock."""

from __future__ import annotations

import bisect

from ...model import Position
from ..hot.hot_records import DetachedRecords
from .segment_housekeeping import SegmentHousekeeping
from .segment_records import streamed_end

__all__ = ["StreamPlanning", "run_entries"]

_RUN_ENTRIES = 2048
_RUN_BYTES = 1 << 20


def run_entries(average_size: int) -> int:
    """Entries in one of the pump's runs when entries are ``average_size``
    bytes long on average: about a megabyte, 2,048 at most, one at least."""
    return max(1, min(_RUN_ENTRIES, _RUN_BYTES // max(1, average_size)))


class StreamPlanning(SegmentHousekeeping):
    """Planning the pump's runs (part of the streaming lifecycle)."""

    _stream_next: Position

    def _next_stream_records(self, horizon: Position | None) -> DetachedRecords | None:
        """The next run to stream (see :meth:`_next_stream_step`), located
        in its hot-tier file under the same hold of the ledger's lock."""
        with self._lock:
            step = self._next_stream_step(horizon)
            return None if step is None else self._detach_hot(*step)

    def _stream_horizon(self) -> Position | None:
        """The last entry written when a pump starts (``None``: no ledger
        yet). A pump streams up to there and stops: chasing the entries a
        producer appends meanwhile would take the ledger's lock for a few
        entries at a time, as often as the producer takes it; they are the
        next pump's (requested every megabyte or second of appends)."""
        with self._lock:
            if self._current is not None:
                return Position(self._current.ledger_id, self._current.last_entry_id)
            if not self._ledger_ids:
                return None
            return Position(self._ledger_ids[-1], self._last_entry_id(self._ledger_ids[-1]))

    def _next_stream_step(self, horizon: Position | None = None) -> tuple[int, int, int] | None:
        """Under the lock: the next run of entries to stream (ledger, first,
        last), up to ``horizon`` when given, or ``None`` when every entry
        written so far (up to there) is offered."""
        with self._lock:
            at = self._stream_next
            ids = self._ledger_ids
            for ledger_id in ids[bisect.bisect_left(ids, at.ledger_id) :]:
                if horizon is not None and ledger_id > horizon.ledger_id:
                    return None
                ledger = self._ledgers_by_id[ledger_id]
                context = ledger.offloadContext
                if context.HasField("uidMsb") or context.complete:
                    continue  # offloaded whole (PIP-17), or streamed completely already
                done = streamed_end(context)
                first = max(at.entry_id if ledger_id == at.ledger_id else 0, done + 1)
                last = self._last_entry_id(ledger_id)
                if horizon is not None and ledger_id == horizon.ledger_id:
                    last = min(last, horizon.entry_id)
                if first <= last:
                    self._stream_next = Position(ledger_id, first)
                    return ledger_id, first, min(last, first + self._stream_batch(ledger_id) - 1)
                if self._current is not None and self._current.ledger_id == ledger_id:
                    return None
            return None

    def _stream_batch(self, ledger_id: int) -> int:
        """Under the lock: entries to read at once, about a megabyte of them."""
        if self._current is not None and self._current.ledger_id == ledger_id:
            count, size = self._current.entry_count, self._current.length
        else:
            count, size = int(self._ledgers_by_id[ledger_id].entries), int(self._ledgers_by_id[ledger_id].size)
        return run_entries(size // max(1, count))
