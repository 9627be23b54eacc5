"""The state every part of a managed ledger shares, and the helpers they
all use: its metadata record (read and compare-and-set), the hot-tier
files, the offloader a ledger was written with, and the maintenance lock."""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import uuid as uuid_module
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import (
    ConfigError,
    ConflictError,
    FormatError,
    InvalidRangeError,
    NotFoundError,
    OffloadError,
    StateError,
)
from ..hooks import Event
from ..model import Entry
from ..offload.ledger import LedgerOffloader, StreamingOffloader
from ..proto import LedgerInfo, ManagedLedgerInfo, OffloadContext
from ..retry import RetryPolicy, call_with_retries
from .config import BrokerConfig
from .hot.hot_records import DetachedRecords
from .hot.ledger_file import LedgerFile, index_path
from .lifecycle.ledger_records import ReadStats, driver_metadata, parse_info, unclaimed_hot_files
from .lifecycle.offload_workers import OffloadWorkers
from .lifecycle.offloaders import OffloaderProvider
from .lifecycle.policies import OffloadPolicies, PolicyStore, TopicName
from .metadata_store import MetadataStore, Versioned
from .reads.shared_handles import SharedHandleCache

log = logging.getLogger(__name__)

_HOT_FILES_OPEN = 16
_METADATA_RETRY = RetryPolicy(attempts=5, base_delay=0.01, max_delay=0.5)


class LedgerCore:
    """Shared state and helpers of :class:`~offload_core.managed_ledger.ManagedLedger`
    (which sets every attribute below in its constructor)."""

    topic: TopicName
    name: str
    _data_dir: Path
    _ledger_dir: Path
    _store: MetadataStore
    _config: BrokerConfig
    _policies: PolicyStore
    _offloaders: OffloaderProvider
    _emit: Callable[[Event], None]
    _clock: Callable[[], float]
    _lock: threading.RLock
    _metadata_lock: threading.Lock
    _stored_info: Versioned | None
    _maintenance: threading.Lock
    _current: LedgerFile | None
    _current_created: float
    _hot: OrderedDict[int, LedgerFile]
    _offloaded: SharedHandleCache
    _ledgers_by_id: dict[int, LedgerInfo]
    _ledger_ids: list[int]
    _trimming: set[int]
    _offload_requested: bool
    _trim_requested: bool
    _schedule: Callable[[str, Callable[[], object]], None]
    _offload_running: bool
    _cleanup_errors: dict[int, str]
    _info: ManagedLedgerInfo
    _info_version: int
    _owner_fd: int
    read_stats: ReadStats
    _segment_uid: uuid_module.UUID | None
    _offload_workers: OffloadWorkers | None
    _stream_lock: threading.Lock

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
        info = parse_info(record.value, self._path)
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

    def _update(self, mutate: Callable[[ManagedLedgerInfo], object]) -> None:
        """Apply ``mutate`` to the stored info with compare-and-set; if the
        record changed meanwhile, it is re-read and ``mutate`` applied to
        the fresh copy (it must decide from what it sees, not from the
        ledger's own fields); retried a bounded number of times, then
        :class:`ConflictError` propagates. When it returns, the ledger's
        metadata is this update's or a later one.

        Updates take turns on a lock of their own and read and write the
        store without the ledger's lock (unless the caller holds it, as an
        append sealing a ledger does): an offload's or a segment's update
        on a background thread does not stall appends for a metadata
        write. The ledger's lock is taken only to adopt the result, never
        while holding the metadata lock, and an update adopted after a
        later one does not replace it."""

        def attempt() -> None:
            with self._metadata_lock:
                # The record as this ledger last wrote it: its owner is the
                # only writer, so a read before each update would only cost
                # a statement. Anyone else's write shows as a conflict, and
                # the retry reads the record afresh.
                record = self._stored_info or self._store.get(self._path)
                if record is None:
                    raise NotFoundError(f"metadata of managed ledger {self.name} vanished", key=self._path)
                info = parse_info(record.value, self._path)
                mutate(info)
                self._stored_info = None  # until the set is known to have gone through
                try:
                    stored = self._store.set(self._path, info.SerializeToString(), record.version)
                except NotFoundError:
                    raise NotFoundError(f"metadata of managed ledger {self.name} vanished", key=self._path) from None
                self._stored_info = stored
            with self._lock:
                if stored.version > self._info_version:
                    self._set_info(info, stored.version)

        call_with_retries(attempt, _METADATA_RETRY, retry_on=(ConflictError,))

    def _set_info(self, info: ManagedLedgerInfo, version: int = -1) -> None:
        """Adopt ``info`` (the record's ``version``; -1 when loaded at open)
        as the ledger's metadata, with the lookups reads use (kept with it,
        so no read scans the ledger list)."""
        self._info = info
        self._info_version = version
        self._ledgers_by_id = {int(ledger.ledgerId): ledger for ledger in info.ledgerInfo}
        self._ledger_ids = [int(ledger.ledgerId) for ledger in info.ledgerInfo]

    def _ledger_info(self, ledger_id: int) -> LedgerInfo:
        found = self._ledgers_by_id.get(ledger_id)
        if found is not None:
            return found
        raise InvalidRangeError(f"managed ledger {self.name} has no ledger {ledger_id} (trimmed, or never existed)")

    def _last_entry_id(self, ledger_id: int) -> int:
        """Under the lock: the ledger's last entry (the current one's so far)."""
        if self._current is not None and self._current.ledger_id == ledger_id:
            return self._current.last_entry_id
        return int(self._ledgers_by_id[ledger_id].entries) - 1

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

    def _file(self, ledger_id: int) -> Path:
        return self._ledger_dir / f"{ledger_id}.log"

    def _read_hot(self, ledger_id: int, first: int, last: int) -> list[Entry]:
        return self._detach_hot(ledger_id, first, last).entries()

    def _detach_hot(self, ledger_id: int, first: int, last: int) -> DetachedRecords:
        """Entries of a ledger's hot-tier file, located under the lock and
        read by the caller outside it (a read never stalls appends)."""
        with self._lock:
            if self._current is not None and self._current.ledger_id == ledger_id:
                return self._current.detach(first, last)
            return self._hot_file(ledger_id).detach(first, last)

    def _hot_file(self, ledger_id: int) -> LedgerFile:
        """Under the lock: the sealed ledger's open file (a few are kept open)."""
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
        return ledger

    def _offloader_for_context(self, context: OffloadContext) -> LedgerOffloader:
        policies = self.policies()
        assert policies.max_block_size is not None and policies.read_buffer_size is not None
        return self._offloaders.for_settings(
            driver_metadata(context),
            max_block_size=policies.max_block_size,
            read_buffer_size=policies.read_buffer_size,
        )

    def _streaming_offloader(self, settings: dict[str, str]) -> StreamingOffloader:
        policies = self.policies()
        assert policies.max_block_size is not None and policies.read_buffer_size is not None
        offloader = self._offloaders.for_settings(settings, max_block_size=policies.max_block_size,
                                                  read_buffer_size=policies.read_buffer_size)  # fmt: skip
        if not isinstance(offloader, StreamingOffloader):
            raise ConfigError(f"the offloader recorded for a segment ({type(offloader).__name__}) cannot read segments")
        return offloader

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
            self._maintenance_released()

    def _maintenance_released(self) -> None:
        """Called after an offload or trim lets go of the maintenance lock,
        to pick up work requested meanwhile (see ``OffloadLifecycle``)."""

    def _unlink_hot_file(self, ledger_id: int) -> None:
        with self._lock:  # hot reads use the cache under this lock
            cached = self._hot.pop(ledger_id, None)
            if cached is not None:
                cached.close()
        self._file(ledger_id).unlink(missing_ok=True)
        index_path(self._file(ledger_id)).unlink(missing_ok=True)
