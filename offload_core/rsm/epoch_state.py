"""Which remote segment serves which offsets, as Kafka's
``RemoteLogLeaderEpochState`` decides it. Pure.

After a leader change the new leader tiers its own segments, whose roll
points differ from the old leader's, so remote segments overlap. Kafka
keeps, per leader epoch, a map from start offset to the segment serving
from there: a segment that finishes copying takes its start offset and
displaces the entries at or after it (when it reaches at least as far in
the epoch as any before it), which become *unreferenced*: still in the
store, listed for cleanup, never read. Segments still copying or being
deleted are unreferenced too. Replaying the copies in the order they
finished rebuilds that state; :func:`served_ranges` then gives each offset
of the log to exactly one segment, following the leader-epoch lineage
(a later epoch starting at an offset truncates the earlier ones there, as
Kafka's leader-epoch cache does).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

from .types import RemoteLogSegmentId, RemoteLogSegmentMetadata, RemoteLogSegmentState

__all__ = ["EpochState", "ServedRange", "epoch_states", "served_ranges"]

_S = RemoteLogSegmentState


@dataclass
class EpochState:
    """One leader epoch's segments: start offset -> serving segment,
    the unreferenced ones, and the highest offset copied in the epoch."""

    offset_to_id: dict[int, RemoteLogSegmentId] = field(default_factory=dict)
    unreferenced: set[RemoteLogSegmentId] = field(default_factory=set)
    highest: int | None = None

    def copy_finished(self, start: int, segment_id: RemoteLogSegmentId, epoch_end: int) -> None:
        """Kafka's ``handleSegmentWithCopySegmentFinishedState``."""
        keys = sorted(self.offset_to_id)
        while keys and keys[-1] >= start and self.highest is not None and self.highest <= epoch_end:
            self.unreferenced.add(self.offset_to_id.pop(keys.pop()))
        self.offset_to_id[start] = segment_id
        self.unreferenced.discard(segment_id)
        if self.highest is None or epoch_end > self.highest:
            self.highest = epoch_end

    def delete_started(self, start: int, segment_id: RemoteLogSegmentId) -> None:
        """Kafka's ``handleSegmentWithDeleteSegmentStartedState``."""
        if self.offset_to_id.get(start) == segment_id:
            del self.offset_to_id[start]
        self.unreferenced.add(segment_id)

    def floor(self, offset: int) -> RemoteLogSegmentId | None:
        """The segment mapped at the greatest start offset <= ``offset``."""
        keys = sorted(self.offset_to_id)
        at = bisect.bisect_right(keys, offset)
        return self.offset_to_id[keys[at - 1]] if at else None


def epoch_states(
    finished: Iterable[RemoteLogSegmentMetadata], unfinished: Iterable[RemoteLogSegmentMetadata] = ()
) -> dict[int, EpochState]:
    """The per-epoch state after the copies in ``finished`` (in the order
    they finished; each now COPY_SEGMENT_FINISHED or DELETE_SEGMENT_STARTED)
    and ``unfinished`` (copies that never finished: still copying, or
    deleted after a failure). A finished copy maps its start offset in each
    of its epochs; one being deleted is then unreferenced (deletes are
    replayed last: a delete only ever removes its own mapping); an
    unfinished one is unreferenced."""
    states: dict[int, EpochState] = {}
    deleting: list[RemoteLogSegmentMetadata] = []
    for segment in finished:
        for epoch, start in segment.segment_leader_epochs.items():
            end = segment.epoch_end_offset(epoch)
            assert end is not None  # the epoch is the segment's own
            states.setdefault(epoch, EpochState()).copy_finished(start, segment.segment_id, end)
        if segment.state is _S.DELETE_SEGMENT_STARTED:
            deleting.append(segment)
    for segment in deleting:
        for epoch, start in segment.segment_leader_epochs.items():
            states[epoch].delete_started(start, segment.segment_id)
    for segment in unfinished:
        for epoch in segment.segment_leader_epochs:
            states.setdefault(epoch, EpochState()).unreferenced.add(segment.segment_id)
    return states


@dataclass(frozen=True)
class ServedRange:
    """Offsets ``first..last`` (inclusive) of the log, served by ``segment``."""

    segment: RemoteLogSegmentMetadata
    first: int
    last: int


def _lineage(states: dict[int, EpochState]) -> list[tuple[int, int]]:
    """``(epoch, start offset)`` of the epochs that serve offsets, as
    Kafka's leader-epoch cache assigns them: an epoch starting at or before
    an earlier epoch's start truncates it."""
    lineage: list[tuple[int, int]] = []
    for epoch in sorted(states):
        if not states[epoch].offset_to_id:
            continue
        start = min(states[epoch].offset_to_id)
        while lineage and lineage[-1][1] >= start:
            lineage.pop()
        lineage.append((epoch, start))
    return lineage


def served_ranges(
    states: dict[int, EpochState], segments: dict[RemoteLogSegmentId, RemoteLogSegmentMetadata]
) -> list[ServedRange]:
    """Every offset the referenced segments hold, each given to one segment,
    in offset order: within an epoch, from the segment mapped at the
    greatest start offset at or before it, up to that segment's end in the
    epoch; across epochs, by the lineage. Consecutive offsets of one
    segment are one range."""
    ranges: list[ServedRange] = []
    lineage = _lineage(states)
    for number, (epoch, epoch_start) in enumerate(lineage):
        epoch_last = lineage[number + 1][1] - 1 if number + 1 < len(lineage) else None
        mapped = sorted(states[epoch].offset_to_id.items())
        for at, (start, segment_id) in enumerate(mapped):
            segment = segments[segment_id]
            end = segment.epoch_end_offset(epoch)
            assert end is not None  # mapped in the epoch, so it holds it
            bounds = [end] + ([mapped[at + 1][0] - 1] if at + 1 < len(mapped) else [])
            last = min(bounds + ([epoch_last] if epoch_last is not None else []))
            first = max(start, epoch_start)
            if first > last:
                continue
            previous = ranges[-1] if ranges else None
            if previous is not None and previous.segment.segment_id == segment_id and previous.last + 1 == first:
                ranges[-1] = ServedRange(segment, previous.first, last)
            else:
                ranges.append(ServedRange(segment, first, last))
    return ranges
