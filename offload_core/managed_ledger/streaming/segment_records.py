"""Streaming-offload segments in a managed ledger's metadata (Pulsar's
``OffloadContext.offloadSegment``): the changes the lifecycle makes to the
record and what it reports. Pure: each function reads or mutates the
``ManagedLedgerInfo`` it is given."""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...proto import KeyValue, LedgerInfo, ManagedLedgerInfo, OffloadContext, OffloadSegment
from ..lifecycle.ledger_records import uid_halves, uuid_of

__all__ = [
    "SegmentState",
    "assign_segment",
    "complete_segment",
    "drop_segment",
    "fully_streamed",
    "mark_streamed_ledgers",
    "segment_settings",
    "segment_states",
    "streamed_end",
]


@dataclass(frozen=True)
class SegmentState:
    """One segment as ``offload topics stats`` shows it: ``status`` is
    ``assigned`` (being written), ``complete`` (Pulsar's ``complete=true``, the
    word ``segments ls`` uses too) or ``failed`` (being
    retried); ``ledgers`` holds ``(ledger id, first entry, last entry)``
    (the last is ``None`` while assigned); ``bytes`` is the data object's
    size where it was asked for and known."""

    uuid: str
    status: str
    ledgers: tuple[tuple[int, int, int | None], ...]
    assigned_ms: int
    offloaded_ms: int | None
    error: str | None = None
    bytes: int | None = None
    settings: tuple[tuple[str, str], ...] = field(default=(), repr=False)


def segment_settings(segment: OffloadSegment) -> dict[str, str]:
    """The driver settings recorded with a segment."""
    return {pair.key: pair.value for pair in segment.driverMetadata.properties}


def streamed_end(context: OffloadContext) -> int:
    """The ledger's last entry in a complete segment (-1: none)."""
    ends = [int(s.endEntryId) for s in context.offloadSegment if s.complete]
    return max(ends) if ends else -1


def segment_first_entry(context: OffloadContext, segment: OffloadSegment) -> int:
    """Where ``segment`` starts in the ledger: just after the complete
    segment of the ledger that ends before it (they follow each other)."""
    own = int(segment.endEntryId) if segment.complete else None
    before = [int(s.endEntryId) for s in context.offloadSegment
              if s.complete and (own is None or s.endEntryId < own)]  # fmt: skip
    return max(before) + 1 if before else 0


def fully_streamed(ledger: LedgerInfo) -> bool:
    """Sealed, streamed, not yet marked offloaded, and every entry in a
    complete segment."""
    context = ledger.offloadContext
    return bool(
        ledger.HasField("entries")
        and not context.HasField("uidMsb")
        and not context.complete
        and context.offloadSegment
        and all(s.complete for s in context.offloadSegment)
        and streamed_end(context) == ledger.entries - 1
    )


def mark_streamed_ledgers(info: ManagedLedgerInfo, now_ms: int) -> None:
    """Mark offloaded (``complete``, timestamped) every ledger :func:`fully_streamed`."""
    for ledger in info.ledgerInfo:
        if fully_streamed(ledger):
            ledger.offloadContext.complete = True
            ledger.offloadContext.timestamp = now_ms


def _ledger(info: ManagedLedgerInfo, ledger_id: int) -> LedgerInfo | None:
    return next((ledger for ledger in info.ledgerInfo if ledger.ledgerId == ledger_id), None)


def assign_segment(
    info: ManagedLedgerInfo, ledger_id: int, uid: uuid_module.UUID, now_ms: int, settings: Mapping[str, str]
) -> bool:
    """Record ledger ``ledger_id`` in segment ``uid`` (``complete=false``)
    unless it is there already; false if the ledger is gone."""
    ledger = _ledger(info, ledger_id)
    if ledger is None:
        return False
    msb, lsb = uid_halves(uid)
    context = ledger.offloadContext
    if any((s.uidMsb, s.uidLsb) == (msb, lsb) for s in context.offloadSegment):
        return True
    segment = context.offloadSegment.add(uidMsb=msb, uidLsb=lsb, complete=False, assignedTimestamp=now_ms)
    segment.driverMetadata.name = settings.get("driver", "")
    segment.driverMetadata.properties.extend(KeyValue(key=k, value=v) for k, v in sorted(settings.items()))
    return True


def complete_segment(info: ManagedLedgerInfo, uid: uuid_module.UUID, ends: Mapping[int, int], now_ms: int) -> None:
    """Segment ``uid`` is durable: each ledger in ``ends`` (ledger id to its
    last entry in the segment) gets ``complete``, the timestamp and the end;
    a ledger assigned without an entry in it (its entry went to the next
    segment) loses the assignment; fully streamed ledgers are marked."""
    msb, lsb = uid_halves(uid)
    for ledger in info.ledgerInfo:
        segments = ledger.offloadContext.offloadSegment
        for position in reversed(range(len(segments))):
            segment = segments[position]
            if (segment.uidMsb, segment.uidLsb) != (msb, lsb):
                continue
            end = ends.get(ledger.ledgerId)
            if end is None:
                del segments[position]
            else:
                segment.complete, segment.offloadedTimestamp, segment.endEntryId = True, now_ms, end
    mark_streamed_ledgers(info, now_ms)


def drop_segment(info: ManagedLedgerInfo, uid: uuid_module.UUID) -> None:
    """Forget segment ``uid`` in every ledger (its objects are gone)."""
    msb, lsb = uid_halves(uid)
    for ledger in info.ledgerInfo:
        segments = ledger.offloadContext.offloadSegment
        for position in reversed(range(len(segments))):
            if (segments[position].uidMsb, segments[position].uidLsb) == (msb, lsb):
                del segments[position]


@dataclass
class _SegmentRecord:
    assigned_ms: int
    settings: tuple[tuple[str, str], ...]
    ledgers: list[tuple[int, int, int | None]] = field(default_factory=list)
    complete: bool = False
    offloaded_ms: int | None = None


def segment_states(
    info: ManagedLedgerInfo, failed: uuid_module.UUID | None = None, error: str | None = None
) -> list[SegmentState]:
    """Every segment ``info`` names, oldest first; ``failed`` is the one
    whose last upload failed with ``error``."""
    found: dict[uuid_module.UUID, _SegmentRecord] = {}
    for ledger in info.ledgerInfo:
        context = ledger.offloadContext
        for segment in context.offloadSegment:
            settings = tuple(sorted(segment_settings(segment).items()))
            record = found.setdefault(uuid_of(segment), _SegmentRecord(int(segment.assignedTimestamp), settings))
            end = int(segment.endEntryId) if segment.complete else None
            record.ledgers.append((int(ledger.ledgerId), segment_first_entry(context, segment), end))
            record.complete = bool(segment.complete)
            if segment.complete:
                record.offloaded_ms = int(segment.offloadedTimestamp)
    states = []
    for uid, record in found.items():
        is_failed = uid == failed and error is not None
        states.append(
            SegmentState(
                uuid=str(uid),
                status="complete" if record.complete else "failed" if is_failed else "assigned",
                ledgers=tuple(record.ledgers),
                assigned_ms=record.assigned_ms,
                offloaded_ms=record.offloaded_ms,
                error=error if is_failed else None,
                settings=record.settings,
            )
        )
    return sorted(states, key=lambda state: (state.assigned_ms, state.ledgers))
