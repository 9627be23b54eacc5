"""One ledger read back from the PIP-76 segments that hold it: a
:class:`ReadHandle` whose entries span several segments (each of which may
hold other ledgers too). Each segment's index is loaded the first time an
entry in it is read."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...errors import InvalidRangeError, StateError
from ...formats.pulsar_v1 import closed_ledger_metadata
from ...model import Entry
from ..reading.offloaded_read_handle import OffloadedReadHandle
from ..reading.read_handle import LedgerMetadataView, ReadHandle, check_read_range

__all__ = ["LedgerSegment", "SegmentedReadHandle"]


@dataclass(frozen=True)
class LedgerSegment:
    """Entries ``first_entry_id..last_entry_id`` of a ledger, in segment ``uuid``."""

    uuid: str
    first_entry_id: int
    last_entry_id: int
    driver_metadata: tuple[tuple[str, str], ...] = ()


SegmentOpener = Callable[[LedgerSegment], ReadHandle]
"""Opens the part of the ledger one segment holds (``read_segment``)."""


class SegmentedReadHandle(LedgerMetadataView):
    """Ledger ``ledger_id`` (``length`` bytes, entries ``0..last``) from
    ``segments``, which must cover ``0..last`` in order without gaps or
    overlaps (:class:`InvalidRangeError` otherwise). Reads across segment
    boundaries are split and joined; a reader reaching a segment's last
    block has the next segment opened and read ahead. Thread-safe."""

    def __init__(self, ledger_id: int, segments: Sequence[LedgerSegment], length: int, opener: SegmentOpener) -> None:
        expected = 0
        for segment in segments:
            if segment.first_entry_id != expected or segment.last_entry_id < segment.first_entry_id:
                raise InvalidRangeError(
                    f"ledger {ledger_id}: its segments do not cover its entries in order (segment {segment.uuid} "
                    f"holds {segment.first_entry_id}..{segment.last_entry_id}, expected to start at {expected})"
                )
            expected = segment.last_entry_id + 1
        if not segments:
            raise InvalidRangeError(f"ledger {ledger_id} is in no segment")
        self._ledger_id = ledger_id
        self._metadata = closed_ledger_metadata(length=length, last_entry_id=expected - 1)
        self._segments = tuple(segments)
        self._starts = [segment.first_entry_id for segment in segments]
        self._opener = opener
        self._handles: dict[str, ReadHandle] = {}
        self._lock = threading.Lock()
        self._closed = False
        self._prefetched: set[str] = set()
        self.readers = 1
        """How many sequential readers each segment's handle follows (see
        :attr:`OffloadedReadHandle.readers`)."""

    @property
    def segments(self) -> tuple[LedgerSegment, ...]:
        return self._segments

    def read(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` inclusive, from as many segments as they span."""
        check_read_range(self._ledger_id, first, last, self.last_entry_id)
        entries: list[Entry] = []
        at = first
        while at <= last:
            number = bisect.bisect_right(self._starts, at) - 1
            segment = self._segments[number]
            stop = min(last, segment.last_entry_id)
            handle = self._handle(segment)
            entries.extend(handle.read(at, stop))
            at = stop + 1
            if number + 1 < len(self._segments) and isinstance(handle, OffloadedReadHandle):
                self._prefetch_after(handle, stop, self._segments[number + 1])
        return entries

    def prefetch(self, entry_id: int) -> bool:
        """Open the segment holding ``entry_id`` and start reading it ahead
        from there (see :meth:`OffloadedReadHandle.prefetch`)."""
        handle = self._handle(self._segments[bisect.bisect_right(self._starts, entry_id) - 1])
        return isinstance(handle, OffloadedReadHandle) and handle.prefetch(entry_id)

    def in_last_block(self, entry_id: int) -> bool:
        """Whether ``entry_id`` is in the last block of the ledger's last segment."""
        last_segment = self._segments[-1]
        if entry_id < last_segment.first_entry_id:
            return False
        handle = self._handle(last_segment)
        return isinstance(handle, OffloadedReadHandle) and handle.in_last_block(entry_id)

    def _prefetch_after(self, handle: OffloadedReadHandle, last_read: int, following: LedgerSegment) -> None:
        """A reader in its segment's last block is about to cross into the
        next segment: open that one now and start reading it ahead, so its
        first range is under way while the rest of this block is consumed."""
        if not handle.in_last_block(last_read):
            return
        with self._lock:
            if following.uuid in self._prefetched:
                return
            self._prefetched.add(following.uuid)
        next_handle = self._handle(following)
        if isinstance(next_handle, OffloadedReadHandle):
            next_handle.prefetch(following.first_entry_id)

    def _handle(self, segment: LedgerSegment) -> ReadHandle:
        with self._lock:
            if self._closed:
                raise StateError(f"ledger {self._ledger_id}: read handle is closed")
            handle = self._handles.get(segment.uuid)
            if handle is None:
                handle = self._opener(segment)
                if isinstance(handle, OffloadedReadHandle):
                    handle.readers = self.readers
                self._handles[segment.uuid] = handle
            return handle

    def close(self) -> None:
        with self._lock:
            self._closed = True
            handles, self._handles = list(self._handles.values()), {}
        for handle in handles:
            handle.close()
