"""Retention of a managed ledger (trimming consumed ledgers past the
retention time or size, from both tiers) and its durable cursors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

from ...errors import (
    OffloadError,
)
from ...hooks import Event
from ...model import Position
from ...proto import LedgerInfo, NestedPositionInfo, OffloadContext
from ..ledger_core import LedgerCore
from ..metadata_store import MetadataStore
from .ledger_records import TieredEntry, driver_metadata, remove_ledger, uuid_of
from .policies import ReadPriority


class CursorLedger(Protocol):
    """What a :class:`Cursor` needs of its managed ledger (a ``ManagedLedger``)."""

    _store: MetadataStore

    def first_available(self, position: Position) -> Position: ...

    def read_tiered(
        self, position: Position, count: int, *, priority: ReadPriority | str | None = None
    ) -> list[TieredEntry]: ...

    def _cursor_path(self, name: str) -> str: ...


class Retention(LedgerCore):
    """Trimming by retention, and the cursors that hold it back."""

    maybe_offload: Callable[[], object]

    # -- retention -------------------------------------------------------------------------

    def trim(self) -> list[int]:
        """Delete sealed ledgers past retention (time or size, oldest first)
        that every cursor has consumed, from both tiers: offloaded objects
        and hot file first, then the metadata (a crash in between is
        finished by the next trim). Waits for a running offload or trim.
        Returns the trimmed ledger ids."""
        if not self._retention_set():
            return []
        with self._exclusive("trim"):
            return self._trim_locked()

    def trim_in_background(self) -> list[int]:
        """:meth:`trim` without waiting: when an offload or another trim holds
        the ledger, the trim is requested and runs when that one lets go (so
        no trigger is lost). What the broker's background threads call, after
        a ledger rolls over and periodically."""
        if not self._retention_set():
            return []
        self._trim_requested = True
        trimmed: list[int] = []
        while self._trim_requested:
            if not self._maintenance.acquire(blocking=False):
                return trimmed  # the holder sees the request when it lets go
            try:
                self._trim_requested = False
                trimmed += self._trim_locked()
            finally:
                self._maintenance.release()
        if self._offload_requested:
            self._schedule(f"threshold offload of {self.name}", self.maybe_offload)
        return trimmed

    def _retention_set(self) -> bool:
        policies = self.policies()
        minutes, megabytes = policies.retention_time_minutes, policies.retention_size_mb
        assert minutes is not None and megabytes is not None
        return minutes >= 0 or megabytes >= 0

    def _trim_locked(self) -> list[int]:
        policies = self.policies()
        minutes, megabytes = policies.retention_time_minutes, policies.retention_size_mb
        assert minutes is not None and megabytes is not None
        now = self._now_ms()
        with self._lock:
            consumed = self._slowest_cursor()
            sealed = [ledger for ledger in self._info.ledgerInfo if ledger.HasField("entries")]
            total = sum(ledger.size for ledger in self._info.ledgerInfo) + (
                self._current.length if self._current is not None else 0
            )
            doomed: list[LedgerInfo] = []
            for ledger in sealed:
                if consumed is not None and Position(ledger.ledgerId, ledger.entries - 1) > consumed:
                    break
                too_old = minutes >= 0 and now - ledger.timestamp >= minutes * 60_000
                too_big = megabytes >= 0 and total > megabytes << 20
                if not (too_old or too_big):
                    break
                doomed.append(ledger)
                total -= ledger.size
            # Readers that fail on these ledgers from now on are told they
            # were trimmed, not that their objects went missing.
            self._trimming.update(int(ledger.ledgerId) for ledger in doomed)
        try:
            for ledger in doomed:
                self._delete_ledger(ledger)
        finally:
            with self._lock:
                self._trimming.difference_update(int(ledger.ledgerId) for ledger in doomed)
        return [ledger.ledgerId for ledger in doomed]

    def _delete_ledger(self, ledger: LedgerInfo) -> None:
        ledger_id = ledger.ledgerId
        context = ledger.offloadContext
        if context.HasField("uidMsb"):
            self._offloader_for_context(context).delete_offloaded(ledger_id, uuid_of(context), driver_metadata(context))
            with self._lock:
                self._offloaded.forget(ledger_id)
        self._unlink_hot_file(ledger_id)
        if context.offloadSegment:
            # Under the streaming lock: a segment being completed now is not
            # judged unreferenced before its completion is recorded.
            with self._stream_lock:
                self._delete_segments_of(ledger_id, context)
                self._update(lambda info: remove_ledger(info, ledger_id))
        else:
            self._update(lambda info: remove_ledger(info, ledger_id))
        self._emit(Event("ledger.trimmed", {"managed_ledger": self.name, "ledger_id": ledger_id}))

    def _delete_segments_of(self, ledger_id: int, context: OffloadContext) -> None:
        """Delete the segments holding ``ledger_id`` that hold no other
        ledger still in the metadata (and are not being written): a
        segment's objects go only with the last of its ledgers."""
        with self._lock:
            others = {uuid_of(s) for other in self._info.ledgerInfo if other.ledgerId != ledger_id
                      for s in other.offloadContext.offloadSegment}  # fmt: skip
            open_uid = self._segment_uid
            self._offloaded.forget(ledger_id)
        for segment in context.offloadSegment:
            uid = uuid_of(segment)
            if uid in others or uid == open_uid:
                continue
            settings = {kv.key: kv.value for kv in segment.driverMetadata.properties}
            self._streaming_offloader(settings).delete_segment(uid, settings)
            self._emit(Event("offload.segment", {"step": "deleted", "managed_ledger": self.name, "uuid": str(uid)}))

    # -- cursors ---------------------------------------------------------------------------

    def _cursor_path(self, name: str) -> str:
        return f"cursors/{self.name}/{name}"

    def open_cursor(self, name: str) -> Cursor:
        """A durable cursor; a new one starts before the first entry."""
        if not name or "/" in name:
            raise OffloadError(f"cursor name {name!r} must be non-empty and without '/'")
        path = self._cursor_path(name)
        record = self._store.get(path)
        if record is None:
            with self._lock:
                first = self._info.ledgerInfo[0].ledgerId if self._info.ledgerInfo else 0
            start = NestedPositionInfo(ledgerId=first, entryId=-1)
            record = self._store.create(path, start.SerializeToString())
        stored = NestedPositionInfo.FromString(record.value)
        return Cursor(
            cast(CursorLedger, self),  # a Retention is only ever part of a ManagedLedger, which reads
            name,
            Position(stored.ledgerId, stored.entryId) if stored.entryId >= 0 else None,
            stored.ledgerId,
            record.version,
        )

    def _slowest_cursor(self) -> Position | None:
        """The lowest mark-delete position of all cursors (``None``: no
        cursors). Entry id -1 means nothing of that ledger is consumed."""
        slowest: Position | None = None
        for path in self._store.children(f"cursors/{self.name}/"):
            record = self._store.get(path)
            if record is not None:
                stored = NestedPositionInfo.FromString(record.value)
                mark = Position(stored.ledgerId, stored.entryId)
                slowest = mark if slowest is None else min(slowest, mark)
        return slowest


class Cursor:
    """A durable reading position: :meth:`read` moves it forward in memory,
    :meth:`mark_delete` stores it (compare-and-set)."""

    def __init__(self, ledger: CursorLedger, name: str, mark: Position | None, first_ledger: int, version: int):
        self._ledger = ledger
        self.name = name
        self.mark_deleted = mark
        self._version = version
        self._next = Position(mark.ledger_id, mark.entry_id + 1) if mark is not None else Position(first_ledger, 0)

    def read(self, count: int, *, priority: ReadPriority | str | None = None) -> list[TieredEntry]:
        """The next ``count`` entries (fewer at the end of the log)."""
        self._next = self._ledger.first_available(self._next)
        entries = self._ledger.read_tiered(self._next, count, priority=priority)
        if entries:
            last = entries[-1].entry
            self._next = Position(last.ledger_id, last.entry_id + 1)
        return entries

    def mark_delete(self, position: Position) -> None:
        """Store that everything up to ``position`` is consumed."""
        value = NestedPositionInfo(ledgerId=position.ledger_id, entryId=position.entry_id).SerializeToString()
        self._version = self._ledger._store.set(self._ledger._cursor_path(self.name), value, self._version).version
        self.mark_deleted = position
