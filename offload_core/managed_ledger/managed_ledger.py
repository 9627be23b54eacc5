"""The managed ledger: a named log of ledgers across the hot tier and object storage.

Readers address entries by :class:`Position` and never need to know which
tier holds them. The offload lifecycle follows Pulsar's:

1. *prepare*: objects of an earlier, unfinished attempt are deleted, then
   the new uid and driver metadata are stored (``complete=false``) — so no
   object is ever written that the metadata does not name;
2. *offload* the sealed ledger (PIP-17 objects);
3. *complete*: ``complete=true`` and a timestamp, compare-and-set, retried;
4. after ``managedLedgerOffloadDeletionLagMs``: ``bookkeeperDeleted=true``
   is stored, then the hot-tier file is deleted.

A crash at any step is finished or cleaned up when the ledger is reopened.
Every step is reported as an ``offload.lifecycle`` event.

The class is assembled from one module per job: ``ledger_core`` (shared
state and metadata), ``tiered_reads`` (reads under the read priorities),
``offload_lifecycle`` (offload and its cleanup) and ``ledger_retention``
(trimming and cursors); this module holds appending, rollover, recovery
and the ledger's state.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from ..errors import StateError
from ..hooks import Event
from ..model import Position
from ..proto import ManagedLedgerInfo
from .config import BrokerConfig
from .hot.ledger_file import FsyncPolicy, LedgerFile
from .lifecycle.ledger_records import (
    LedgerState,
    OffloadStatus,
    ReadStats,
    TieredEntry,
    UnfinishedOffload,
    remove_ledger,
    unclaimed_hot_files,
    uuid_of,
)
from .lifecycle.ledger_retention import Cursor, Retention
from .lifecycle.offload_lifecycle import OffloadLifecycle
from .lifecycle.offload_workers import OffloadWorkers
from .lifecycle.offloaders import OffloaderProvider
from .lifecycle.policies import PolicyStore, TopicName
from .metadata_store import MetadataStore, Versioned
from .reads.shared_handles import SharedHandleCache
from .reads.tiered_reads import TieredReads
from .streaming.segment_backfill import SegmentBackfill
from .streaming.segment_workers import SegmentWorkers
from .streaming.streaming_lifecycle import SegmentState, StreamingLifecycle

__all__ = [
    "Cursor",
    "LedgerState",
    "ManagedLedger",
    "OffloadStatus",
    "SegmentState",
    "TieredEntry",
    "UnfinishedOffload",
    "unclaimed_hot_files",
]

log = logging.getLogger(__name__)

_OFFLOADED_HANDLES_OPEN = 16


class ManagedLedger(StreamingLifecycle, SegmentBackfill, OffloadLifecycle, TieredReads, Retention):
    """One topic's log. Open it through :class:`~offload_core.managed_ledger.Broker`.

    Only one process may have a managed ledger open (an ``flock`` on its
    lock file guards it); inside that process the methods are thread-safe.
    """

    def __init__(
        self,
        topic: TopicName,
        *,
        data_dir: Path,
        store: MetadataStore,
        config: BrokerConfig,
        policies: PolicyStore,
        offloaders: OffloaderProvider,
        emit: Callable[[Event], None],
        clock: Callable[[], float] = time.time,
        schedule: Callable[[str, Callable[[], object]], None] | None = None,
        schedule_after: Callable[[float, str, Callable[[], object]], None] | None = None,
        offload_workers: OffloadWorkers | None = None,
        segment_workers: SegmentWorkers | None = None,
    ) -> None:
        self.topic = topic
        self.name = topic.managed_ledger_name
        self._data_dir = data_dir
        self._ledger_dir = data_dir / "ledgers"
        self._store = store
        self._config = config
        self._policies = policies
        self._offloaders = offloaders
        self._emit = emit
        self._clock = clock
        self._lock = threading.RLock()
        self._metadata_lock = threading.Lock()
        self._stored_info: Versioned | None = None
        self._status_version: int | None = None
        self._maintenance = threading.Lock()
        self._current: LedgerFile | None = None
        self._current_created = 0.0
        self._hot: OrderedDict[int, LedgerFile] = OrderedDict()
        self._offloaded = SharedHandleCache(_OFFLOADED_HANDLES_OPEN)
        self._prefetched_ledgers = set()
        self._trimming: set[int] = set()
        self._offload_requested = False
        self._trim_requested = False
        self._schedule = schedule if schedule is not None else _run_now
        self._inline_schedule = schedule is None
        self._schedule_after = schedule_after
        self._offload_workers = offload_workers
        self._segment_workers = segment_workers
        self._offload_running = False
        self._cleanup_errors: dict[int, str] = {}
        self.read_stats = ReadStats()
        self._init_streaming()
        self._ledger_dir.mkdir(parents=True, exist_ok=True)
        self._owner_fd = self._take_ownership()
        try:
            self._set_info(self._load_info())
            self._recover()
        except BaseException:
            os.close(self._owner_fd)
            raise

    # -- metadata ----------------------------------------------------------------

    def _recover(self) -> None:
        """Finish or clean up whatever a crash left: unfinished offloads,
        hot copies marked deleted, and the last ledger (torn tail cut, then
        sealed, or dropped if empty). Cleaning an unfinished offload needs
        its store; when that fails the open goes on (the ledger is read from
        the hot tier) and the cleanup is retried by :meth:`run_maintenance`
        and by the ledger's next offload."""
        for ledger in list(self._info.ledgerInfo):
            context = ledger.offloadContext
            if context.HasField("uidMsb") and not context.complete:
                self._clean_unfinished_offload_quietly(ledger.ledgerId)
            elif context.complete and context.bookkeeperDeleted:
                self._unlink_hot_file(ledger.ledgerId)
        if self._info.ledgerInfo and not self._info.ledgerInfo[-1].HasField("entries"):
            self._recover_last_ledger(self._info.ledgerInfo[-1].ledgerId)
        self.sweep_leftovers()
        self._clean_assigned_segments_at_open()

    def _recover_last_ledger(self, ledger_id: int) -> None:
        path = self._file(ledger_id)
        if path.exists():
            recovered = LedgerFile.open(path, ledger_id, repair=True, fsync=self._config.fsync_policy)
            entries, size = recovered.entry_count, recovered.length
            if entries:
                recovered.write_offsets_index()  # sealed now: later opens skip the scan
            recovered.close()
        else:
            entries = size = 0
        if entries == 0:
            self._update(lambda info: remove_ledger(info, ledger_id))
            path.unlink(missing_ok=True)
            return
        now = self._now_ms()

        def seal(info: ManagedLedgerInfo) -> None:
            ledger = self._find(info, ledger_id)
            ledger.entries, ledger.size, ledger.timestamp = entries, size, now

        self._update(seal)
        self._emit(
            Event(
                "ledger.sealed",
                {"managed_ledger": self.name, "ledger_id": ledger_id, "entries": entries, "recovered": True},
            )
        )

    # -- appending -------------------------------------------------------------------

    def append(self, data: bytes) -> Position:
        """Append one entry; returns its position. The current ledger rolls
        over (is sealed) when it reaches the maximum entries, size or age;
        sealing schedules the threshold offload in the background (the
        append never waits on object storage)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"entries are bytes, got {type(data).__name__}")
        with self._lock:
            if self._current is None:
                self._create_ledger()
            current = self._current
            assert current is not None
            entry_id = current.append(bytes(data))
            position = Position(current.ledger_id, entry_id)
            if self._current_is_full():
                self._seal_current()
            self._stream_if_enabled(len(data))
        return position

    def _current_is_full(self) -> bool:
        current = self._current
        assert current is not None
        config = self._config
        return (
            current.entry_count >= config.max_entries_per_ledger
            or current.length >= config.max_size_per_ledger_mb << 20
            or self._clock() - self._current_created >= config.max_ledger_rollover_minutes * 60
        )

    def roll_over_if_due(self) -> bool:
        """Seal the current ledger if it is past its maximum age (call it
        periodically); true if it was sealed. As any seal, it schedules the
        threshold offload and retention on the broker's background threads."""
        return self._roll_over_if_due(offload_and_trim_in_background=True)

    def _roll_over_if_due(self, *, offload_and_trim_in_background: bool) -> bool:
        with self._lock:
            if self._current is not None and self._current.entry_count and self._current_is_full():
                self._seal_current(offload_and_trim_in_background=offload_and_trim_in_background)
                return True
        return False

    def _create_ledger(self) -> None:
        ledger_id = self._next_ledger_id()

        def create(info: ManagedLedgerInfo) -> None:
            info.ledgerInfo.add(ledgerId=ledger_id, timestamp=0)

        if not self._create_in_open_segment(ledger_id, create):
            self._update(create)
        self._current = LedgerFile.create(self._file(ledger_id), ledger_id, fsync=self._config.fsync_policy)
        self._current_created = self._clock()

    def _seal_current(self, *, offload_and_trim_in_background: bool = True) -> None:
        """Seal the current ledger; then, unless told not to (by a caller
        that offloads and trims itself next), schedule the threshold offload
        and retention in the background."""
        current = self._current
        assert current is not None
        self._flush_before_seal()
        if self._config.fsync_policy is not FsyncPolicy.NONE:
            # Durable before the metadata says sealed. Under "none" the OS
            # decides for this file too (after a power loss a sealed ledger
            # then reads as damaged, never as fewer entries silently).
            current.sync()
        current.write_offsets_index()
        entries, size, now = current.entry_count, current.length, self._now_ms()

        def seal(info: ManagedLedgerInfo) -> None:
            ledger = self._find(info, current.ledger_id)
            ledger.entries, ledger.size, ledger.timestamp = entries, size, now

        self._update(seal)
        current.close()
        self._current = None
        self._emit(
            Event("ledger.sealed", {"managed_ledger": self.name, "ledger_id": current.ledger_id, "entries": entries})
        )
        if offload_and_trim_in_background:
            # Offloading by threshold reads hot files and writes to the store:
            # the broker's background threads do it, so the append that sealed
            # the ledger returns at once.
            self._schedule(f"threshold offload of {self.name}", self.maybe_offload)
            # A rollover is when retention may have something new to trim (as in Pulsar).
            self._schedule(f"retention of {self.name}", self.trim_in_background)
        self._stream_if_enabled(sealed=True)

    def offload_prefix(self, position: Position | None = None) -> OffloadStatus:
        """Offload sealed ledgers before ``position`` (see
        :meth:`OffloadLifecycle.offload_prefix`); with streaming offload on,
        ledgers are not offloaded whole: everything written so far is
        streamed and the open segment is closed and completed instead."""
        if self.policies().streaming_enabled:
            return self.complete_current_segment()
        return super().offload_prefix(position)

    # -- reading ------------------------------------------------------------------------

    def run_maintenance(self) -> dict[str, object]:
        """What a broker does periodically: roll the current ledger over if it
        is too old, offload by threshold, delete hot copies past the lag,
        and trim by retention; with streaming offload on, stream what is
        not in a segment yet and close a segment past its age. Returns what
        each step did. Its own rollover schedules no background offload or
        trim: this call does both itself, so what a rollover made due is
        done and reported here (an offload or trim already running on
        another thread takes this call's request instead, and is not counted)."""
        # This run offloads and trims itself below: background copies of
        # those steps, scheduled by its own rollover, would only race it (and
        # whichever took the ledger first would do, and report, its work).
        rolled = self._roll_over_if_due(offload_and_trim_in_background=False)
        self.retry_unfinished_cleanups()
        self.sweep_leftovers()
        streamed = self.pump_streaming()
        offloaded = self.maybe_offload()
        hot_deleted = self.delete_hot_copies_past_lag()
        trimmed = self.trim_in_background()
        return {"rolled_over": rolled, "streamed": streamed, "offload": offloaded, "hot_deleted": hot_deleted,
                "trimmed": trimmed}  # fmt: skip

    # -- state -------------------------------------------------------------------------------

    def ledgers(self) -> list[LedgerState]:
        """Every ledger, oldest first, with its tier state."""
        with self._lock:
            states = []
            for ledger in self._info.ledgerInfo:
                context = ledger.offloadContext
                sealed = ledger.HasField("entries")
                if self._current is not None and self._current.ledger_id == ledger.ledgerId:
                    entries, size = self._current.entry_count, self._current.length
                else:
                    entries, size = int(ledger.entries), int(ledger.size)
                if context.complete:
                    tier = "offloaded" if context.bookkeeperDeleted else "hot+offloaded"
                elif context.HasField("uidMsb"):
                    tier = "offloading"
                else:
                    tier = "hot"
                states.append(
                    LedgerState(
                        ledger_id=ledger.ledgerId,
                        entries=entries,
                        size=size,
                        sealed=sealed,
                        tier=tier,
                        uuid=str(uuid_of(context)) if context.HasField("uidMsb") else None,
                        closed_at_ms=int(ledger.timestamp) if sealed else None,
                    )
                )
            return states

    @property
    def last_position(self) -> Position | None:
        """Position of the last entry appended (``None`` if the log is empty)."""
        with self._lock:
            for ledger in reversed(self._info.ledgerInfo):
                last = self._last_entry_id(ledger.ledgerId)
                if last >= 0:
                    return Position(ledger.ledgerId, last)
        return None

    def close(self) -> None:
        """Flush and release the ledger; the current ledger is sealed when it
        is next opened (as Pulsar recovers a ledger on reopen). An offload or
        trim in progress (a background one, say) finishes first, and so does
        the open streaming segment."""
        self._close_streaming()
        # Not _exclusive: a closing ledger schedules no more work when it lets go.
        if not self._maintenance.acquire(timeout=600):
            raise StateError(f"closing {self.name} waited 10 minutes for an offload or trim to finish")
        try:
            self._close_locked()
        finally:
            self._offload_requested = self._trim_requested = False
            self._maintenance.release()

    def _close_locked(self) -> None:
        with self._lock:
            if self._current is not None:
                self._current.close()
                self._current = None
            for ledger in self._hot.values():
                ledger.close()
            self._hot.clear()
            self._offloaded.close()  # a handle a read still uses is closed when that read ends
            if self._owner_fd >= 0:
                os.close(self._owner_fd)
                self._owner_fd = -1

    def __enter__(self) -> ManagedLedger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _run_now(what: str, job: Callable[[], object]) -> None:
    """The schedule of a managed ledger built without a broker: run inline."""
    job()
