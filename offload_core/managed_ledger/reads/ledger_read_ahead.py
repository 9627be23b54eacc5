"""Opening offloaded ledgers for reading, and read-ahead across them: a
reader in the last block of an offloaded ledger has the next ledger's
handle opened and its first ranges fetched in the background, so crossing
into it does not start with a wait. Every handle that is a
:class:`PrefetchingHandle` takes part: PIP-17 and PIP-76 handles and the
file-system offloader's MapFile handles alike."""

from __future__ import annotations

import logging

from ...errors import OffloadError
from ...offload.reading.read_handle import PrefetchingHandle, ReadHandle
from ...offload.segments.segmented_read_handle import LedgerSegment, SegmentedReadHandle
from ...proto import OffloadContext
from ..ledger_core import LedgerCore
from ..lifecycle.ledger_records import driver_metadata, uuid_of
from ..lifecycle.policies import ReadPriority
from .shared_handles import SharedHandle

log = logging.getLogger(__name__)

_READS_OFFLOADED_FIRST = (ReadPriority.OFFLOADED_FIRST, ReadPriority.OFFLOADED_ONLY)


class LedgerReadAhead(LedgerCore):
    """Opening offloaded ledgers' read handles; prefetching the ledger after
    the one a reader is finishing."""

    _prefetched_ledgers: set[int]

    def _open_offloaded(self, ledger_id: int, context: OffloadContext) -> ReadHandle:
        if not context.HasField("uidMsb") and context.offloadSegment:
            return self._open_streamed(ledger_id, context)
        offloader = self._offloader_for_context(context)
        return offloader.read_offloaded(ledger_id, uuid_of(context), driver_metadata(context))

    def _open_streamed(self, ledger_id: int, context: OffloadContext) -> ReadHandle:
        """A ledger offloaded by streaming: one handle over its segments, in
        entry order, each opened when first read."""
        ordered = sorted((s for s in context.offloadSegment if s.complete), key=lambda s: s.endEntryId)
        parts, first = [], 0
        for segment in ordered:
            settings = tuple(sorted((kv.key, kv.value) for kv in segment.driverMetadata.properties))
            parts.append(LedgerSegment(str(uuid_of(segment)), first, int(segment.endEntryId), settings))
            first = int(segment.endEntryId) + 1
        with self._lock:
            length = int(self._ledger_info(ledger_id).size)

        def open_part(part: LedgerSegment) -> ReadHandle:
            settings = dict(part.driver_metadata)
            offloader = self._streaming_offloader(settings)
            return offloader.read_segment(part.uuid, ledger_id, settings, last_entry_id=part.last_entry_id)

        return SegmentedReadHandle(ledger_id, parts, length, open_part)

    def _shared_offloaded(self, ledger_id: int, context: OffloadContext) -> SharedHandle:
        """The shared handle of ``ledger_id`` with one more user, opened if
        none is cached (outside the lock: opening sends remote requests).
        Give it back with ``self._offloaded.give_back``."""
        with self._lock:
            shared = self._offloaded.take(ledger_id)
        if shared is None:
            handle = self._open_offloaded(ledger_id, context)
            with self._lock:
                shared = self._offloaded.add(ledger_id, handle)
        return shared

    def _prefetch_following(self, ledger_id: int, handle: ReadHandle, last_read: int, priority: ReadPriority) -> None:
        """Called after a read of ``ledger_id`` that ended at ``last_read``:
        when that is in the ledger's last block, queue the next ledger's
        prefetch on the broker's background threads (once per ledger)."""
        if not isinstance(handle, PrefetchingHandle) or not handle.in_last_block(last_read):
            return
        with self._lock:
            ids = self._ledger_ids
            position = ids.index(ledger_id) + 1 if ledger_id in self._ledgers_by_id else len(ids)
            if position >= len(ids) or ids[position] in self._prefetched_ledgers:
                return
            following = ids[position]
            self._prefetched_ledgers.add(following)
        self._schedule(f"read-ahead of ledger {following} of {self.name}",
                       lambda: self._prefetch_ledger(following, priority))  # fmt: skip

    def _prefetch_ledger(self, ledger_id: int, priority: ReadPriority) -> None:
        """Open ``ledger_id`` into the shared handle cache and start reading
        it ahead from its first entry, if a read with ``priority`` would
        take it from the offloaded tier. Best effort: a failure is logged,
        and the reader's own read will meet it again and report it."""
        with self._lock:
            ledger = self._ledgers_by_id.get(ledger_id)
            if ledger is None or ledger_id in self._trimming or not ledger.offloadContext.complete:
                return
            context = OffloadContext()
            context.CopyFrom(ledger.offloadContext)
            if not context.bookkeeperDeleted and priority not in _READS_OFFLOADED_FIRST:
                return
        shared: SharedHandle | None = None
        try:
            shared = self._shared_offloaded(ledger_id, context)
            with shared.read_lock:
                prefetching = shared.handle
                if isinstance(prefetching, PrefetchingHandle):
                    prefetching.prefetch(0)
        except OffloadError as exc:
            log.warning("read-ahead of ledger %s of %s failed (the read will retry): %s", ledger_id, self.name, exc)
        finally:
            if shared is not None:
                with self._lock:
                    self._offloaded.give_back(shared)
