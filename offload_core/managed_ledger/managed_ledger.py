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
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import threading
import time
import uuid as uuid_module
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from google.protobuf.message import DecodeError

from ..errors import (
    ConfigError,
    ConflictError,
    FormatError,
    InvalidRangeError,
    NotFoundError,
    OffloadError,
    StateError,
    TransientStorageError,
)
from ..formats import pulsar_v1 as v1
from ..hooks import Event
from ..model import Entry, Position
from ..offload.ledger import LedgerOffloader
from ..offload.read_handle import ReadHandle
from ..proto import KeyValue, LedgerInfo, ManagedLedgerInfo, NestedPositionInfo, OffloadContext
from ..retry import RetryPolicy, call_with_retries
from .config import BrokerConfig
from .ledger_file import LedgerFile
from .metadata_store import MetadataStore
from .offload_ticket import OffloadTicket, SealedLedgerReadHandle
from .offloaders import OffloaderProvider
from .policies import OffloadPolicies, PolicyStore, ReadPriority, TopicName

__all__ = [
    "Cursor",
    "LedgerState",
    "ManagedLedger",
    "OffloadStatus",
    "TieredEntry",
    "UnfinishedOffload",
    "unclaimed_hot_files",
]

log = logging.getLogger(__name__)

Tier = Literal["hot", "offloaded"]
_HOT_FILES_OPEN = 16
_OFFLOADED_HANDLES_OPEN = 16
_METADATA_RETRY = RetryPolicy(attempts=5, base_delay=0.01, max_delay=0.5)
# Errors that say the request or the setup is wrong, not the tier: *_FIRST
# falls back on storage and format failures only.
_NO_FALLBACK = (ConfigError, InvalidRangeError, StateError, ConflictError)


@dataclass(frozen=True)
class TieredEntry:
    """An entry and the tier that served it."""

    entry: Entry
    tier: Tier


@dataclass(frozen=True)
class LedgerState:
    """One ledger as ``offload topics stats`` shows it."""

    ledger_id: int
    entries: int
    size: int
    sealed: bool
    tier: str  # hot | offloading | hot+offloaded | offloaded
    uuid: str | None
    closed_at_ms: int | None


@dataclass(frozen=True)
class OffloadStatus:
    """The outcome of the last offload run (Pulsar's OffloadProcessStatus)."""

    status: str  # not-run | running | interrupted | success | error
    first_unoffloaded: Position | None = None
    offloaded_ledgers: int = 0
    error: str | None = None


@dataclass(frozen=True)
class UnfinishedOffload:
    """An offload prepared (uid recorded, ``complete=false``) and not
    finished: interrupted, or failed with its cleanup failing too. It holds
    no reads back (the ledger is read from the hot tier) but its objects, if
    any, stay until it is cleaned up."""

    ledger_id: int
    uuid: str
    settings: dict[str, str]
    cleanup_error: str | None


@dataclass
class ReadStats:
    """Entries served per tier and fallbacks between tiers."""

    served: Counter[str] = field(default_factory=Counter)
    fallbacks: Counter[str] = field(default_factory=Counter)


class ManagedLedger:
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
        self._maintenance = threading.Lock()
        self._current: LedgerFile | None = None
        self._current_created = 0.0
        self._hot: OrderedDict[int, LedgerFile] = OrderedDict()
        self._offloaded: OrderedDict[int, ReadHandle] = OrderedDict()
        self._offload_running = False
        self._cleanup_errors: dict[int, str] = {}
        self.read_stats = ReadStats()
        self._ledger_dir.mkdir(parents=True, exist_ok=True)
        self._owner_fd = self._take_ownership()
        try:
            self._info = self._load_info()
            self._recover()
        except BaseException:
            os.close(self._owner_fd)
            raise

    # -- metadata ----------------------------------------------------------------

    @property
    def _path(self) -> str:
        return f"managed-ledgers/{self.name}"

    def _take_ownership(self) -> int:
        lock_dir = self._data_dir / "locks"
        lock_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_dir / (self.name.replace("/", "%2F") + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StateError(f"managed ledger {self.name} is open in another process; close it there first") from None
        return fd

    def _load_info(self) -> ManagedLedgerInfo:
        record = self._store.get(self._path)
        if record is None:
            self._store.create(self._path, ManagedLedgerInfo().SerializeToString())
            return ManagedLedgerInfo()
        info = _parse_info(record.value, self._path)
        if not info.ledgerInfo:
            self._refuse_if_data_is_unclaimed()
        return info

    def _refuse_if_data_is_unclaimed(self) -> None:
        """An existing but empty record is what a new topic has, and also
        what a damaged metadata store shows; hot-tier files with entries
        that no managed ledger claims tell the second apart. Opening
        would start a new log beside them, so refuse instead."""
        unclaimed = unclaimed_hot_files(self._store, self._ledger_dir)
        if unclaimed:
            raise OffloadError(
                f"managed ledger {self.name} has an empty metadata record, but hot-tier files of ledgers "
                f"{unclaimed[:10]} in {self._ledger_dir} belong to no topic: the metadata store may be damaged. "
                "Restore metadata.db from a backup, or move those files away if they are not this topic's"
            )

    def _update(self, mutate: Callable[[ManagedLedgerInfo], None]) -> None:
        """Apply ``mutate`` to the stored info with compare-and-set. On a
        conflict the record is re-read and ``mutate`` applied to the fresh
        copy (it must decide again from what it sees); retried a bounded
        number of times, then :class:`ConflictError` propagates."""

        def attempt() -> None:
            record = self._store.get(self._path)
            if record is None:
                raise NotFoundError(f"metadata of managed ledger {self.name} vanished", key=self._path)
            info = _parse_info(record.value, self._path)
            mutate(info)
            self._store.set(self._path, info.SerializeToString(), record.version)
            self._info = info

        with self._lock:
            call_with_retries(attempt, _METADATA_RETRY, retry_on=(ConflictError,))

    def _ledger_info(self, ledger_id: int) -> LedgerInfo:
        for info in self._info.ledgerInfo:
            if info.ledgerId == ledger_id:
                return info  # type: ignore[no-any-return]
        raise InvalidRangeError(f"managed ledger {self.name} has no ledger {ledger_id} (trimmed, or never existed)")

    @staticmethod
    def _find(info: ManagedLedgerInfo, ledger_id: int) -> LedgerInfo:
        for ledger in info.ledgerInfo:
            if ledger.ledgerId == ledger_id:
                return ledger  # type: ignore[no-any-return]
        raise NotFoundError(f"ledger {ledger_id} is no longer in the managed ledger's metadata")

    def _next_ledger_id(self) -> int:
        path = "ledger-id-counter"

        def attempt() -> int:
            record = self._store.get(path)
            if record is None:
                self._store.create(path, b"1")
                return 1
            value = int(record.value) + 1
            self._store.set(path, str(value).encode(), record.version)
            return value

        return call_with_retries(attempt, _METADATA_RETRY, retry_on=(ConflictError,))

    def _lifecycle(self, step: str, ledger_id: int, **fields: object) -> None:
        self._emit(
            Event("offload.lifecycle", {"step": step, "managed_ledger": self.name, "ledger_id": ledger_id, **fields})
        )

    def policies(self) -> OffloadPolicies:
        """The effective policies: topic over namespace over broker defaults."""
        return self._policies.effective(self.topic)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- recovery ------------------------------------------------------------------

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
        self.sweep_stale_uploads()

    def sweep_stale_uploads(self) -> int:
        """Remove temporary files that killed offloads left in the store the
        policies name (older than an hour, held by no live writer); best
        effort, logged. Returns how many were removed."""
        try:
            swept = self._offloaders.sweep_stale_uploads(self.policies())
        except Exception as exc:
            log.warning("sweeping stale uploads for %s failed: %s", self.name, exc)
            return 0
        if swept:
            log.info("removed %d stale temporary upload(s) of %s", swept, self.name)
            self._emit(Event("storage.swept", {"managed_ledger": self.name, "files": swept}))
        return swept

    def _clean_unfinished_offload_quietly(self, ledger_id: int) -> bool:
        """:meth:`_clean_unfinished_offload`, logging and counting a failure
        instead of raising it; true if it was cleaned."""
        try:
            self._clean_unfinished_offload(ledger_id)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self._cleanup_errors[ledger_id] = error
            log.warning("cleanup of the unfinished offload of ledger %s of %s failed: %s", ledger_id, self.name, error)
            self._lifecycle("cleanup-failed", ledger_id, error=error)
            return False
        self._cleanup_errors.pop(ledger_id, None)
        return True

    def retry_unfinished_cleanups(self) -> list[int]:
        """Try again to clean every unfinished offload (objects deleted, uid
        cleared); returns the ledgers cleaned. Failures are logged, counted
        and shown by :meth:`unfinished_offloads`."""
        cleaned = []
        for unfinished in self.unfinished_offloads():
            if self._maintenance.acquire(blocking=False):
                try:
                    if self._clean_unfinished_offload_quietly(unfinished.ledger_id):
                        cleaned.append(unfinished.ledger_id)
                finally:
                    self._maintenance.release()
        return cleaned

    def unfinished_offloads(self) -> list[UnfinishedOffload]:
        """Offloads prepared and not completed, other than one running now
        in this process, with the error of their last failed cleanup."""
        with self._lock:
            if self._offload_running:
                return []
            return [
                UnfinishedOffload(
                    ledger_id=ledger.ledgerId,
                    uuid=str(_uuid_of(ledger.offloadContext)),
                    settings=_driver_metadata(ledger.offloadContext),
                    cleanup_error=self._cleanup_errors.get(ledger.ledgerId),
                )
                for ledger in self._info.ledgerInfo
                if ledger.offloadContext.HasField("uidMsb") and not ledger.offloadContext.complete
            ]

    def clear_unfinished_offload(self, ledger_id: int, *, force: bool = False) -> list[str]:
        """Clean up ledger ``ledger_id``'s unfinished offload: delete its
        objects, then clear its uid. With ``force`` the uid is cleared even
        when the objects cannot be deleted (the store is gone for good);
        returns the keys that may then be left behind, to delete by hand.

        Raises :class:`OffloadError` if the ledger has no unfinished
        offload, and the store's error when deleting fails without ``force``."""
        with self._exclusive("clear-offload"), self._lock:
            context = self._ledger_info(ledger_id).offloadContext
            if not context.HasField("uidMsb") or context.complete:
                raise StateError(f"ledger {ledger_id} of {self.name} has no unfinished offload to clear")
            try:
                self._clean_unfinished_offload(ledger_id)
            except Exception as exc:
                if not force:
                    raise
                uid = _uuid_of(context)
                settings = _driver_metadata(context)
                log.warning("clearing ledger %s's offload %s without deleting its objects: %s", ledger_id, uid, exc)
                prefix = settings.get("prefix", "")
                left = [prefix + v1.data_key(str(uid), ledger_id), prefix + v1.index_key(str(uid), ledger_id)]
                self._update(lambda info: _clear_context(info, ledger_id, uid))
                self._cleanup_errors.pop(ledger_id, None)
                self._lifecycle("cleared-forced", ledger_id, uuid=str(uid), left=left)
                return left
            self._cleanup_errors.pop(ledger_id, None)
            return []

    def _clean_unfinished_offload(self, ledger_id: int) -> None:
        context = self._ledger_info(ledger_id).offloadContext
        uid = _uuid_of(context)
        offloader = self._offloader_for_context(context)
        offloader.delete_offloaded(ledger_id, uid, _driver_metadata(context))
        self._update(lambda info: _clear_context(info, ledger_id, uid))
        self._lifecycle("cleaned-unfinished", ledger_id, uuid=str(uid))

    def _recover_last_ledger(self, ledger_id: int) -> None:
        path = self._file(ledger_id)
        if path.exists():
            recovered = LedgerFile.open(path, ledger_id, repair=True, fsync=self._config.fsync_policy)
            entries, size = recovered.entry_count, recovered.length
            recovered.close()
        else:
            entries = size = 0
        if entries == 0:
            self._update(lambda info: _remove_ledger(info, ledger_id))
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

    def _file(self, ledger_id: int) -> Path:
        return self._ledger_dir / f"{ledger_id}.log"

    def append(self, data: bytes) -> Position:
        """Append one entry; returns its position. The current ledger rolls
        over (is sealed) when it reaches the maximum entries, size or age;
        sealing may trigger an automatic offload by policy."""
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
        periodically); true if it was sealed."""
        with self._lock:
            if self._current is not None and self._current.entry_count and self._current_is_full():
                self._seal_current()
                return True
        return False

    def _create_ledger(self) -> None:
        ledger_id = self._next_ledger_id()
        self._update(lambda info: info.ledgerInfo.add(ledgerId=ledger_id, timestamp=0))
        self._current = LedgerFile.create(self._file(ledger_id), ledger_id, fsync=self._config.fsync_policy)
        self._current_created = self._clock()

    def _seal_current(self) -> None:
        current = self._current
        assert current is not None
        current.sync()
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
        self.maybe_offload()

    # -- reading ------------------------------------------------------------------------

    def read(self, position: Position, count: int, *, priority: ReadPriority | str | None = None) -> list[Entry]:
        """Up to ``count`` entries from ``position`` on, across ledgers."""
        return [tiered.entry for tiered in self.read_tiered(position, count, priority=priority)]

    def read_tiered(
        self, position: Position, count: int, *, priority: ReadPriority | str | None = None
    ) -> list[TieredEntry]:
        """Like :meth:`read`, saying which tier served each entry.

        ``priority`` overrides the policy for this read. Raises
        :class:`InvalidRangeError` for a position in no ledger, and
        :class:`OffloadError` when a ``*_ONLY`` priority cannot be honoured."""
        chosen = ReadPriority.parse(priority) if priority is not None else self.policies().read_priority
        assert chosen is not None
        if count < 0:
            raise InvalidRangeError(f"count must not be negative, got {count}")
        results: list[TieredEntry] = []
        at = position
        with self._lock:
            ids = [ledger.ledgerId for ledger in self._info.ledgerInfo]
            while len(results) < count:
                if at.ledger_id not in ids:
                    if not ids or at.ledger_id > ids[-1]:
                        break
                    raise InvalidRangeError(
                        f"managed ledger {self.name} has no ledger {at.ledger_id} (trimmed, or never existed)"
                    )
                last = self._last_entry_id(at.ledger_id)
                if at.entry_id > last:
                    following = ids.index(at.ledger_id) + 1
                    if following == len(ids):
                        break
                    at = Position(ids[following], 0)
                    continue
                end = min(last, at.entry_id + count - len(results) - 1)
                entries, tier = self._read_ledger(at.ledger_id, at.entry_id, end, chosen)
                self.read_stats.served[tier] += len(entries)
                results.extend(TieredEntry(entry, tier) for entry in entries)
                at = Position(at.ledger_id, end + 1)
        return results

    def first_available(self, position: Position) -> Position:
        """``position`` if its ledger still exists, else the start of the
        next ledger that does (ledgers before it were trimmed)."""
        with self._lock:
            ids = [ledger.ledgerId for ledger in self._info.ledgerInfo]
        if position.ledger_id in ids:
            return position
        later = [ledger_id for ledger_id in ids if ledger_id > position.ledger_id]
        return Position(later[0], 0) if later else position

    def _last_entry_id(self, ledger_id: int) -> int:
        if self._current is not None and self._current.ledger_id == ledger_id:
            return self._current.last_entry_id
        return int(self._ledger_info(ledger_id).entries) - 1

    def _read_ledger(self, ledger_id: int, first: int, last: int, priority: ReadPriority) -> tuple[list[Entry], Tier]:
        if self._current is not None and self._current.ledger_id == ledger_id:
            if priority is ReadPriority.OFFLOADED_ONLY:
                raise StateError(f"ledger {ledger_id} of {self.name} is still being written; {_only(priority)}")
            return self._current.read(first, last), "hot"
        context = self._ledger_info(ledger_id).offloadContext
        offloaded = context.complete
        hot = not context.bookkeeperDeleted
        if not offloaded:
            if priority is ReadPriority.OFFLOADED_ONLY:
                raise StateError(f"ledger {ledger_id} of {self.name} is not offloaded (yet); {_only(priority)}")
            return self._read_hot(ledger_id, first, last), "hot"
        if not hot:
            if priority is ReadPriority.BOOKKEEPER_ONLY:
                raise StateError(
                    f"ledger {ledger_id} of {self.name} was deleted from the hot tier after offload; {_only(priority)}"
                )
            return self._read_offloaded(ledger_id, first, last), "offloaded"
        order: dict[ReadPriority, list[Tier]] = {
            ReadPriority.OFFLOADED_FIRST: ["offloaded", "hot"],
            ReadPriority.BOOKKEEPER_FIRST: ["hot", "offloaded"],
            ReadPriority.OFFLOADED_ONLY: ["offloaded"],
            ReadPriority.BOOKKEEPER_ONLY: ["hot"],
        }
        tiers = order[priority]
        readers = {"hot": self._read_hot, "offloaded": self._read_offloaded}
        try:
            return readers[tiers[0]](ledger_id, first, last), tiers[0]
        except (OffloadError, OSError) as exc:
            if isinstance(exc, _NO_FALLBACK):
                raise  # a misconfiguration or a wrong request: the other tier would only hide it
            if len(tiers) == 1:
                raise OffloadError(
                    f"ledger {ledger_id} of {self.name}: reading the {tiers[0]} tier failed ({exc}); {_only(priority)}"
                ) from exc
            log.warning(
                "ledger %s of %s: %s tier failed (%s); reading the %s tier",
                ledger_id,
                self.name,
                tiers[0],
                exc,
                tiers[1],
            )
            self.read_stats.fallbacks[f"{tiers[0]}->{tiers[1]}"] += 1
            self._emit(
                Event(
                    "read.fallback",
                    {
                        "managed_ledger": self.name,
                        "ledger_id": ledger_id,
                        "from": tiers[0],
                        "to": tiers[1],
                        "error": str(exc),
                    },
                )
            )
            return readers[tiers[1]](ledger_id, first, last), tiers[1]

    def _read_hot_locked(self, ledger_id: int, first: int, last: int) -> list[Entry]:
        with self._lock:
            return self._read_hot(ledger_id, first, last)

    def _read_hot(self, ledger_id: int, first: int, last: int) -> list[Entry]:
        ledger = self._hot.get(ledger_id)
        if ledger is None:
            ledger = LedgerFile.open(self._file(ledger_id), ledger_id, repair=False)
            expected = int(self._ledger_info(ledger_id).entries)
            if ledger.entry_count != expected:
                ledger.close()
                raise FormatError(
                    f"hot-tier file of ledger {ledger_id} holds {ledger.entry_count} entries, its metadata {expected}"
                )
            self._hot[ledger_id] = ledger
            if len(self._hot) > _HOT_FILES_OPEN:
                self._hot.popitem(last=False)[1].close()
        self._hot.move_to_end(ledger_id)
        return ledger.read(first, last)

    def _read_offloaded(self, ledger_id: int, first: int, last: int) -> list[Entry]:
        handle = self._offloaded.get(ledger_id)
        if handle is None:
            context = self._ledger_info(ledger_id).offloadContext
            offloader = self._offloader_for_context(context)
            handle = offloader.read_offloaded(ledger_id, _uuid_of(context), _driver_metadata(context))
            self._offloaded[ledger_id] = handle
            if len(self._offloaded) > _OFFLOADED_HANDLES_OPEN:
                self._offloaded.popitem(last=False)[1].close()
        self._offloaded.move_to_end(ledger_id)
        try:
            return handle.read(first, last)
        except OffloadError:
            self._offloaded.pop(ledger_id, None)
            raise

    def _offloader_for_context(self, context: OffloadContext) -> LedgerOffloader:
        policies = self.policies()
        assert policies.max_block_size is not None and policies.read_buffer_size is not None
        return self._offloaders.for_settings(
            _driver_metadata(context),
            max_block_size=policies.max_block_size,
            read_buffer_size=policies.read_buffer_size,
        )

    # -- offload -----------------------------------------------------------------------

    @contextmanager
    def _exclusive(self, what: str) -> Iterator[None]:
        """One offload or trim at a time per managed ledger."""
        if not self._maintenance.acquire(timeout=600):
            raise StateError(f"{what} of {self.name} waited 10 minutes for another offload or trim to finish")
        try:
            yield
        finally:
            self._maintenance.release()

    def offload_prefix(self, position: Position | None = None) -> OffloadStatus:
        """Offload every sealed ledger before ``position``'s ledger (all sealed
        ledgers when ``None``), oldest first, stopping at the first failure.

        Returns (and stores, for ``offload-status``) the outcome: the first
        position not offloaded, or the error."""
        with self._exclusive("offload"):
            return self._offload_ledgers(self.offloadable_ledgers(position))

    def maybe_offload(self) -> OffloadStatus | None:
        """Offload by the size and time thresholds, as Pulsar does: walk the
        ledgers newest to oldest summing hot-tier bytes; a sealed ledger not
        yet offloaded goes once the sum passes
        ``managedLedgerOffloadThresholdInBytes``, or once it has been sealed
        longer than ``managedLedgerOffloadThresholdInSeconds``. ``None`` if
        nothing was due."""
        policies = self.policies()
        by_size, by_time = policies.offload_threshold_bytes, policies.offload_threshold_seconds
        assert by_size is not None and by_time is not None
        if by_size < 0 and by_time < 0:
            return None
        now = self._now_ms()
        with self._lock:
            summed = self._current.length if self._current is not None else 0
            due: list[int] = []
            for ledger in reversed(self._info.ledgerInfo):
                if not ledger.HasField("entries"):
                    continue
                summed += ledger.size
                if ledger.offloadContext.complete:
                    continue
                if (by_size >= 0 and summed > by_size) or (by_time >= 0 and now - ledger.timestamp > by_time * 1000):
                    due.append(ledger.ledgerId)
        if not due:
            return None
        if not self._maintenance.acquire(blocking=False):
            return None  # an offload or trim is running; the next trigger catches up
        try:
            return self._offload_ledgers(sorted(due))
        finally:
            self._maintenance.release()

    def _offload_ledgers(self, targets: list[int]) -> OffloadStatus:
        self._store_status(OffloadStatus("running"))
        self._offload_running = True
        try:
            done = 0
            for ledger_id in targets:
                try:
                    self._offload_one(ledger_id)
                except Exception as exc:
                    log.error("offload of ledger %s of %s failed: %s", ledger_id, self.name, exc)
                    return self.record_offload_run(done, {ledger_id: f"{type(exc).__name__}: {exc}"})
                done += 1
            return self.record_offload_run(done, {})
        finally:
            self._offload_running = False

    def _first_unoffloaded(self) -> Position | None:
        with self._lock:
            for ledger in self._info.ledgerInfo:
                if not ledger.offloadContext.complete:
                    return Position(ledger.ledgerId, 0)
        return None

    def _offload_one(self, ledger_id: int) -> None:
        ticket = self.prepare_offload(ledger_id)
        try:
            offloader = self._offloaders.for_settings(
                dict(ticket.settings), max_block_size=ticket.max_block_size, read_buffer_size=ticket.read_buffer_size
            )
            handle = SealedLedgerReadHandle(
                ledger_id, ticket.entries, ticket.size, managed_ledger=self.name, ctime_ms=ticket.ctime_ms,
                read=lambda first, last: self._read_hot_locked(ledger_id, first, last),
            )  # fmt: skip
            offloader.offload(handle, ticket.uuid, {"ManagedLedgerName": self.name})
            self._lifecycle("offloaded", ledger_id, uuid=ticket.uuid)
            self.complete_offload(ticket)
        except Exception as exc:
            self._abandon_quietly(ticket, exc)
            raise

    def _abandon_quietly(self, ticket: OffloadTicket, cause: BaseException) -> None:
        """Abandon a failed offload, best effort: if even that fails (the
        store is unreachable), the ticket stays for a later cleanup and the
        cause says so."""
        try:
            self.abandon_offload(ticket)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self._cleanup_errors[ticket.ledger_id] = error
            cause.add_note(
                f"abandoning the offload of ledger {ticket.ledger_id} failed too ({error}); it is retried later, "
                f"or clear it with `offload topics clear-offload {self.topic} --ledger {ticket.ledger_id}`"
            )

    def offloadable_ledgers(self, position: Position | None = None) -> list[int]:
        """Sealed ledgers not offloaded yet, before ``position``'s ledger (all
        when ``None``), oldest first."""
        with self._lock:
            return [
                ledger.ledgerId
                for ledger in self._info.ledgerInfo
                if ledger.HasField("entries")
                and not ledger.offloadContext.complete
                and (position is None or ledger.ledgerId < position.ledger_id)
            ]

    def prepare_offload(self, ledger_id: int) -> OffloadTicket:
        """Step 1 of an offload: objects of an earlier unfinished attempt are
        deleted, then a new uid and the driver settings are recorded
        (``complete=false``, compare-and-set). The ticket says what to write
        (:func:`~offload_core.managed_ledger.offload_ticket.write_offload`).

        Raises :class:`OffloadError` if the ledger is not sealed or already
        offloaded, and the driver's errors if the configured store cannot
        be opened."""
        policies = self.policies()
        _, settings = self._offloaders.for_policies(policies)
        assert policies.max_block_size is not None and policies.read_buffer_size is not None
        with self._lock:
            ledger = self._ledger_info(ledger_id)
            if not ledger.HasField("entries"):
                raise StateError(f"ledger {ledger_id} of {self.name} is not sealed; only sealed ledgers offload")
            if ledger.offloadContext.complete:
                raise StateError(f"ledger {ledger_id} of {self.name} is already offloaded")
            if ledger.offloadContext.HasField("uidMsb"):
                # Objects of the earlier attempt go before the uid naming them is replaced.
                self._clean_unfinished_offload(ledger_id)
            entries, size = int(ledger.entries), int(ledger.size)
            # The index's BookKeeper ctime dates the data for retention; the
            # ledger's close time is the closest we record to its creation.
            ctime_ms = int(ledger.timestamp) or self._now_ms()
        uid = uuid_module.uuid4()

        def prepare(info: ManagedLedgerInfo) -> None:
            target = self._find(info, ledger_id)
            if target.offloadContext.complete:
                raise StateError(f"ledger {ledger_id} was offloaded meanwhile")
            target.ClearField("offloadContext")
            context = target.offloadContext
            context.uidMsb, context.uidLsb = _uid_halves(uid)
            context.complete = False
            context.driverMetadata.name = settings["driver"]
            context.driverMetadata.properties.extend(KeyValue(key=k, value=v) for k, v in sorted(settings.items()))

        self._update(prepare)
        self._lifecycle("prepared", ledger_id, uuid=str(uid))
        return OffloadTicket(
            managed_ledger=self.name,
            ledger_id=ledger_id,
            uuid=str(uid),
            entries=entries,
            size=size,
            hot_file=str(self._file(ledger_id)),
            data_dir=str(self._data_dir),
            settings=tuple(sorted(settings.items())),
            max_block_size=policies.max_block_size,
            read_buffer_size=policies.read_buffer_size,
            ctime_ms=ctime_ms,
        )

    def complete_offload(self, ticket: OffloadTicket) -> None:
        """Step 3: mark the offload complete (compare-and-set, retried) once
        every object of the ledger is written. Raises :class:`OffloadError`
        if the ledger's recorded uid is no longer the ticket's."""
        uid = uuid_module.UUID(ticket.uuid)
        now = self._now_ms()

        def complete(info: ManagedLedgerInfo) -> None:
            context = self._find(info, ticket.ledger_id).offloadContext
            if not context.HasField("uidMsb") or _uuid_of(context) != uid:
                raise StateError(f"ledger {ticket.ledger_id}: offload uid changed underneath this offload")
            context.complete = True
            context.timestamp = now

        call_with_retries(
            lambda: self._update(complete), _METADATA_RETRY, retry_on=(ConflictError, TransientStorageError)
        )
        self._lifecycle("completed", ticket.ledger_id, uuid=ticket.uuid)

    def abandon_offload(self, ticket: OffloadTicket) -> None:
        """Undo a prepared offload that failed: its objects (if any) are
        deleted, then its uid is cleared, unless another attempt replaced it."""
        with self._lock:
            context = self._ledger_info(ticket.ledger_id).offloadContext
            if context.complete or not context.HasField("uidMsb") or str(_uuid_of(context)) != ticket.uuid:
                return
            self._clean_unfinished_offload(ticket.ledger_id)

    def record_offload_run(self, offloaded: int, failures: Mapping[int, str]) -> OffloadStatus:
        """Store, for ``offload-status``, the outcome of an offload run (this
        ledger's own, or one done with tickets, such as a Spark backfill);
        ``failures`` maps ledger ids to errors, and the status names the
        first. After a run without failures, hot copies past the deletion
        lag are deleted."""
        if failures:
            first = min(failures)
            status = OffloadStatus("error", Position(first, 0), offloaded, failures[first])
        else:
            self.delete_hot_copies_past_lag()
            status = OffloadStatus("success", self._first_unoffloaded(), offloaded)
        self._store_status(status)
        return status

    def delete_hot_copies_past_lag(self) -> list[int]:
        """Delete hot-tier copies of ledgers offloaded longer ago than
        ``managedLedgerOffloadDeletionLagMs``: metadata first
        (``bookkeeperDeleted=true``), then the file. Returns their ids."""
        lag = self.policies().deletion_lag_ms
        assert lag is not None
        now = self._now_ms()
        with self._lock:
            due = [
                ledger.ledgerId
                for ledger in self._info.ledgerInfo
                if ledger.offloadContext.complete
                and not ledger.offloadContext.bookkeeperDeleted
                and now - ledger.offloadContext.timestamp >= lag
            ]
        for ledger_id in due:

            def mark(info: ManagedLedgerInfo, ledger_id: int = ledger_id) -> None:
                self._find(info, ledger_id).offloadContext.bookkeeperDeleted = True

            self._update(mark)
            self._lifecycle("hot-delete-marked", ledger_id)
            self._unlink_hot_file(ledger_id)
            self._lifecycle("hot-deleted", ledger_id)
        return due

    def _unlink_hot_file(self, ledger_id: int) -> None:
        cached = self._hot.pop(ledger_id, None)
        if cached is not None:
            cached.close()
        self._file(ledger_id).unlink(missing_ok=True)

    def _store_status(self, status: OffloadStatus) -> None:
        path = f"offload-status/{self.name}"
        value = json.dumps(
            {
                "status": status.status,
                "first_unoffloaded": str(status.first_unoffloaded) if status.first_unoffloaded else None,
                "offloaded_ledgers": status.offloaded_ledgers,
                "error": status.error,
                "at_ms": self._now_ms(),
            }
        ).encode()
        record = self._store.get(path)
        if record is None:
            self._store.create(path, value)
        else:
            self._store.set(path, value, record.version)

    def offload_status(self) -> OffloadStatus:
        """The last offload run's outcome (``not-run`` if there was none).
        A run recorded as ``running`` that is not running in this process
        (which owns the ledger) was cut off: it shows as ``interrupted``."""
        path = f"offload-status/{self.name}"
        record = self._store.get(path)
        if record is None:
            return OffloadStatus("not-run")
        try:
            values = json.loads(record.value)
            first = values["first_unoffloaded"]
            status = OffloadStatus(
                values["status"], Position.parse(first) if first else None, values["offloaded_ledgers"], values["error"]
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise OffloadError(
                f"offload status record {path!r} in the metadata store is corrupt ({exc}); the next offload run "
                "rewrites it"
            ) from None
        if status.status == "running" and not self._offload_running:
            return dataclasses.replace(status, status="interrupted")
        return status

    def run_maintenance(self) -> dict[str, object]:
        """What a broker does periodically: roll the current ledger over if it
        is too old, offload by threshold, delete hot copies past the lag,
        and trim by retention. Returns what each step did."""
        rolled = self.roll_over_if_due()
        self.retry_unfinished_cleanups()
        self.sweep_stale_uploads()
        offloaded = self.maybe_offload()
        hot_deleted = self.delete_hot_copies_past_lag()
        trimmed = self.trim()
        return {"rolled_over": rolled, "offload": offloaded, "hot_deleted": hot_deleted, "trimmed": trimmed}

    # -- retention -------------------------------------------------------------------------

    def trim(self) -> list[int]:
        """Delete sealed ledgers past retention (time or size, oldest first)
        that every cursor has consumed, from both tiers: offloaded objects
        and hot file first, then the metadata (a crash in between is
        finished by the next trim). Returns the trimmed ledger ids."""
        policies = self.policies()
        minutes, megabytes = policies.retention_time_minutes, policies.retention_size_mb
        assert minutes is not None and megabytes is not None
        if minutes < 0 and megabytes < 0:
            return []
        with self._exclusive("trim"):
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
            for ledger in doomed:
                self._delete_ledger(ledger)
            return [ledger.ledgerId for ledger in doomed]

    def _delete_ledger(self, ledger: LedgerInfo) -> None:
        ledger_id = ledger.ledgerId
        context = ledger.offloadContext
        if context.HasField("uidMsb"):
            self._offloader_for_context(context).delete_offloaded(
                ledger_id, _uuid_of(context), _driver_metadata(context)
            )
            handle = self._offloaded.pop(ledger_id, None)
            if handle is not None:
                handle.close()
        self._unlink_hot_file(ledger_id)
        self._update(lambda info: _remove_ledger(info, ledger_id))
        self._emit(Event("ledger.trimmed", {"managed_ledger": self.name, "ledger_id": ledger_id}))

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
            self,
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
                        uuid=str(_uuid_of(context)) if context.HasField("uidMsb") else None,
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
        is next opened (as Pulsar recovers a ledger on reopen)."""
        with self._lock:
            if self._current is not None:
                self._current.close()
                self._current = None
            for ledger in self._hot.values():
                ledger.close()
            self._hot.clear()
            for handle in self._offloaded.values():
                handle.close()
            self._offloaded.clear()
            if self._owner_fd >= 0:
                os.close(self._owner_fd)
                self._owner_fd = -1

    def __enter__(self) -> ManagedLedger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Cursor:
    """A durable reading position: :meth:`read` moves it forward in memory,
    :meth:`mark_delete` stores it (compare-and-set)."""

    def __init__(self, ledger: ManagedLedger, name: str, mark: Position | None, first_ledger: int, version: int):
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


def _only(priority: ReadPriority) -> str:
    return f"read priority {priority.name} never reads the other tier (choose a *_FIRST priority to fall back)"


def _uid_halves(uid: uuid_module.UUID) -> tuple[int, int]:
    def signed(value: int) -> int:
        return value - (1 << 64) if value >= 1 << 63 else value

    return signed(uid.int >> 64), signed(uid.int & ((1 << 64) - 1))


def _uuid_of(context: OffloadContext) -> uuid_module.UUID:
    msb = context.uidMsb & ((1 << 64) - 1)
    lsb = context.uidLsb & ((1 << 64) - 1)
    return uuid_module.UUID(int=(msb << 64) | lsb)


def _driver_metadata(context: OffloadContext) -> dict[str, str]:
    return {pair.key: pair.value for pair in context.driverMetadata.properties}


def _clear_context(info: ManagedLedgerInfo, ledger_id: int, uid: uuid_module.UUID) -> None:
    """Clear ledger ``ledger_id``'s offload context if it is still the
    unfinished attempt ``uid`` (not replaced, not completed meanwhile)."""
    for ledger in info.ledgerInfo:
        if ledger.ledgerId == ledger_id:
            context = ledger.offloadContext
            if context.HasField("uidMsb") and _uuid_of(context) == uid and not context.complete:
                ledger.ClearField("offloadContext")


def _parse_info(raw: bytes, path: str) -> ManagedLedgerInfo:
    try:
        info: ManagedLedgerInfo = ManagedLedgerInfo.FromString(raw)
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise OffloadError(
            f"metadata record {path!r} is not a ManagedLedgerInfo ({exc}): the metadata store is damaged; restore "
            "metadata.db from a backup"
        ) from None
    return info


def unclaimed_hot_files(store: MetadataStore, ledger_dir: Path) -> list[int]:
    """Ids of hot-tier ledger files holding entries that no managed ledger
    in ``store`` names, sorted."""
    claimed: set[int] = set()
    for path in store.children("managed-ledgers/"):
        record = store.get(path)
        if record is not None:
            claimed.update(ledger.ledgerId for ledger in _parse_info(record.value, path).ledgerInfo)
    found = []
    for file in ledger_dir.glob("*.log") if ledger_dir.is_dir() else ():
        ledger_id = int(file.stem) if file.stem.isascii() and file.stem.isdigit() else None
        if ledger_id is not None and ledger_id not in claimed and file.stat().st_size > LedgerFile.HEADER_SIZE:
            found.append(ledger_id)
    return sorted(found)


def _remove_ledger(info: ManagedLedgerInfo, ledger_id: int) -> None:
    kept = [ledger for ledger in info.ledgerInfo if ledger.ledgerId != ledger_id]
    del info.ledgerInfo[:]
    info.ledgerInfo.extend(kept)
