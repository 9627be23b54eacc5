"""The housekeeping of a managed ledger's streaming segments: reporting
them, deleting the ones nothing needs (left assigned by a crash, failed and
given up, or unreferenced once their ledgers are trimmed)."""

from __future__ import annotations

import functools
import logging
import uuid as uuid_module
from dataclasses import replace

from ...errors import OffloadError
from ...hooks import Event
from ...model import Position
from ..ledger_core import LedgerCore
from ..lifecycle.ledger_records import uuid_of
from .segment_records import SegmentState, drop_segment, segment_settings, segment_states

__all__ = ["SegmentHousekeeping"]

log = logging.getLogger(__name__)


class SegmentHousekeeping(LedgerCore):
    """Reporting and cleaning up segments (part of the streaming lifecycle)."""

    _segment_settings: dict[str, str]
    _segment_start: Position | None
    _segment_ledgers: set[int]
    _segment_error: str | None
    _leftover_segments_possible: bool

    def _forget_failed_segment(self) -> None:
        uid, settings = self._segment_uid, self._segment_settings
        assert uid is not None
        if self._delete_segment_quietly(uid, settings):
            self._update(functools.partial(drop_segment, uid=uid))
            self._segment_uid = self._segment_start = self._segment_error = None
            self._segment_ledgers = set()

    def _segment_referenced(self, uid: uuid_module.UUID) -> bool:
        with self._lock:
            return any(uuid_of(s) == uid for ledger in self._info.ledgerInfo
                       for s in ledger.offloadContext.offloadSegment)  # fmt: skip

    def _delete_segment_quietly(self, uid: uuid_module.UUID, settings: dict[str, str]) -> bool:
        try:
            offloader = self._streaming_offloader(settings)
            offloader.delete_segment(uid, settings)
        except Exception as exc:
            log.warning("deleting segment %s of %s failed (retried later): %s", uid, self.name, exc)
            return False
        self._emit_segment("deleted", uuid=str(uid))
        return True

    def _clean_assigned_segments(self) -> None:
        """Delete segments left assigned (by a crash, not the open or failed
        one), then drop them from the metadata. Only a crash leaves them, so
        after one complete cleaning (at open) the pump's calls cost nothing
        until a deletion fails: the scan of every ledger's segments under
        the ledger's lock would otherwise hold up producers at each pump."""
        if not self._leftover_segments_possible:
            return
        with self._lock:
            leftovers = {
                uuid_of(s): segment_settings(s)
                for ledger in self._info.ledgerInfo
                for s in ledger.offloadContext.offloadSegment
                if not s.complete and uuid_of(s) != self._segment_uid
            }
        cleaned = 0
        for uid, settings in leftovers.items():
            if self._delete_segment_quietly(uid, settings):
                self._update(functools.partial(drop_segment, uid=uid))
                self._emit_segment("cleaned-unfinished", uuid=str(uid))
                cleaned += 1
        self._leftover_segments_possible = cleaned < len(leftovers)

    def _clean_assigned_segments_at_open(self) -> None:
        """At open: segments a crash left assigned go; streaming then goes on
        after each ledger's last complete segment (see
        :meth:`_next_stream_step`)."""
        try:
            self._clean_assigned_segments()
        except OffloadError as exc:
            log.warning("cleaning unfinished segments of %s failed (retried by the next pump): %s", self.name, exc)

    def segments(self, *, sizes: bool = False) -> list[SegmentState]:
        """Every segment the metadata names, oldest first, with its status;
        with ``sizes``, the size of each offloaded one's data object too (one
        stat each; ``None`` where the store cannot say)."""
        states = self._segment_states()
        if not sizes:
            return states
        return [replace(state, bytes=self._segment_size(state)) if state.status == "complete" else state
                for state in states]  # fmt: skip

    def _segment_size(self, state: SegmentState) -> int | None:
        try:
            offloader = self._streaming_offloader(dict(state.settings))
            return offloader.segment_size(state.uuid, dict(state.settings))
        except OffloadError as exc:
            log.warning("segment %s of %s: size unknown (%s)", state.uuid, self.name, exc)
            return None

    def _segment_states(self) -> list[SegmentState]:
        with self._lock:
            return segment_states(self._info, self._segment_uid, self._segment_error)

    def _emit_segment(self, step: str, **fields: object) -> None:
        uid = fields.pop("uuid", None) or (str(self._segment_uid) if self._segment_uid else None)
        self._emit(Event("offload.segment", {"step": step, "managed_ledger": self.name, "uuid": uid, **fields}))
