"""Backfilling a streaming topic's sealed ledgers in segments planned up
front, written elsewhere (the Spark backfill job): the managed ledger's
side of :mod:`segment_tickets`."""

from __future__ import annotations

import functools
import uuid as uuid_module

from ...errors import StateError
from ...formats import pulsar_v2 as v2
from ..hot.ledger_file import LedgerFile
from ..ledger_core import LedgerCore
from .segment_records import assign_segment, complete_segment, drop_segment, streamed_end
from .segment_tickets import LedgerRun, SegmentTicket, split_into_segments

__all__ = ["SegmentBackfill"]


class SegmentBackfill(LedgerCore):
    """Segment tickets for the sealed entries of a streaming topic."""

    def prepare_segment_tickets(self) -> list[SegmentTicket]:
        """Cut every sealed entry not yet in a segment (oldest ledger first)
        into segments of ``maxSizePerOffloadSegmentMbytes`` and assign each
        in the metadata. Raises :class:`StateError` unless streaming is on
        and no segment is being written here; the driver's errors if the
        configured store cannot be opened."""
        policies = self.policies()
        if not policies.streaming_enabled:
            raise StateError(f"{self.name} does not stream (managedLedgerOffloadStreamingEnabled is off)")
        assert policies.max_block_size and policies.segment_max_size_mb and policies.streaming_buffer_bytes
        assert policies.read_buffer_size is not None
        if not self._stream_lock.acquire(blocking=False):
            raise StateError(f"{self.name} is streaming now; backfill it when it is idle")
        try:
            if self._segment_uid is not None:
                raise StateError(f"{self.name} has a segment open; complete it first (`offload topics offload`)")
            _, settings = self._offloaders.for_policies(policies)
            with self._lock:
                todo = [
                    (int(ledger.ledgerId), streamed_end(ledger.offloadContext) + 1, int(ledger.entries))
                    for ledger in self._info.ledgerInfo
                    if ledger.HasField("entries")
                    and not ledger.offloadContext.HasField("uidMsb")
                    and not ledger.offloadContext.complete
                    and streamed_end(ledger.offloadContext) + 1 < ledger.entries
                ]
                infos = {ledger_id: self._closed_ledger_info(ledger_id) for ledger_id, _, _ in todo}
            files = {
                ledger_id: LedgerFile.open(self._file(ledger_id), ledger_id, repair=False) for ledger_id, _, _ in todo
            }
            try:
                planned = split_into_segments(
                    todo, lambda ledger_id, first, end: files[ledger_id].payload_bytes(first, end),
                    segment_size=policies.segment_max_size_mb << 20, block_size=policies.max_block_size,
                )  # fmt: skip
            finally:
                for file in files.values():
                    file.close()
            tickets = []
            now = self._now_ms()
            for runs in planned:
                uid = uuid_module.uuid4()
                for ledger_id, _, _ in runs:
                    self._update(functools.partial(assign_segment, ledger_id=ledger_id, uid=uid, now_ms=now,
                                                   settings=settings))  # fmt: skip
                tickets.append(
                    SegmentTicket(
                        managed_ledger=self.name,
                        uuid=str(uid),
                        runs=tuple(LedgerRun(lid, first, last, str(self._file(lid))) for lid, first, last in runs),
                        ledger_infos=tuple((lid, infos[lid]) for lid, _, _ in runs),
                        data_dir=str(self._data_dir),
                        settings=tuple(sorted(settings.items())),
                        block_size=policies.max_block_size,
                        buffer_size=policies.streaming_buffer_bytes,
                        read_buffer_size=policies.read_buffer_size,
                        entry_offsets=self._config.entry_offsets,
                    )
                )
            return tickets
        finally:
            self._stream_lock.release()

    def _closed_ledger_info(self, ledger_id: int) -> bytes:
        ledger = self._ledgers_by_id[ledger_id]
        return v2.ledger_info_bytes(ledger_id, last_entry_id=int(ledger.entries) - 1, closed=True,
                                    entries=int(ledger.entries), size=int(ledger.size),
                                    timestamp_ms=int(ledger.timestamp))  # fmt: skip

    def complete_segment_ticket(self, ticket: SegmentTicket, ends: dict[int, int]) -> None:
        """The ticket's segment is written (``ends``: each ledger's last entry
        in it): record it complete, and mark the ledgers it finished."""
        now = self._now_ms()
        self._update(functools.partial(complete_segment, uid=uuid_module.UUID(ticket.uuid), ends=ends, now_ms=now))

    def abandon_segment_ticket(self, ticket: SegmentTicket) -> None:
        """The ticket's segment failed: delete what it may have written, then
        drop its assignment. Raises the store's error if deleting fails (the
        assignment then stays, and the next open cleans it up)."""
        offloader = self._streaming_offloader(dict(ticket.settings))
        offloader.delete_segment(ticket.uuid, dict(ticket.settings))
        self._update(functools.partial(drop_segment, uid=uuid_module.UUID(ticket.uuid)))
