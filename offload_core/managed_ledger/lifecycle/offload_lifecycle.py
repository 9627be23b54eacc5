"""The offload lifecycle of a managed ledger (Pulsar's): prepare (uid
recorded), write the objects, complete (compare-and-set), then delete the
hot copy after the lag. Cleaning up what an offload left unfinished is in
:mod:`.unfinished_offloads`."""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid as uuid_module
from collections.abc import Callable, Mapping

from ...errors import (
    ConflictError,
    NotFoundError,
    OffloadError,
    StateError,
    TransientStorageError,
)
from ...model import Position
from ...proto import KeyValue, ManagedLedgerInfo
from ...retry import RetryPolicy, call_with_retries
from ..metadata_store import Versioned
from ..workers.worker_processes import WorkersUnavailable
from .ledger_records import OffloadStatus, uid_halves, uuid_of
from .offload_ticket import OffloadTicket, SealedLedgerReadHandle
from .unfinished_offloads import UnfinishedOffloads

log = logging.getLogger(__name__)

_METADATA_RETRY = RetryPolicy(attempts=5, base_delay=0.01, max_delay=0.5)


class OffloadLifecycle(UnfinishedOffloads):
    """Offloading sealed ledgers, by hand or by threshold."""

    trim_in_background: Callable[[], list[int]]
    _status_version: int | None

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
        nothing was due (or another offload or trim is running: it runs
        this one's check again when it finishes, so no trigger is lost)."""
        self._offload_requested = True
        outcome: OffloadStatus | None = None
        while self._offload_requested:
            if not self._maintenance.acquire(blocking=False):
                return outcome  # the holder sees the request when it lets go
            try:
                self._offload_requested = False
                outcome = self._offload_due() or outcome
            finally:
                self._maintenance.release()
        if self._trim_requested:  # a retention trigger came while this ran
            self._schedule(f"retention of {self.name}", self.trim_in_background)
        return outcome

    def _maintenance_released(self) -> None:
        if self._offload_requested:  # a threshold trigger came while a trim or manual offload ran
            self._schedule(f"threshold offload of {self.name}", self.maybe_offload)
        if self._trim_requested:
            self._schedule(f"retention of {self.name}", self.trim_in_background)

    def _offload_due(self) -> OffloadStatus | None:
        policies = self.policies()
        by_size, by_time = policies.offload_threshold_bytes, policies.offload_threshold_seconds
        assert by_size is not None and by_time is not None
        if (by_size < 0 and by_time < 0) or policies.streaming_enabled:
            return None  # streamed ledgers are offloaded segment by segment instead
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
        return self._offload_ledgers(sorted(due)) if due else None

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
            workers = self._offload_workers
            if workers is not None and workers.can_write(ticket):
                try:
                    workers.offload(ticket)  # this thread only waits: producers keep the interpreter
                except WorkersUnavailable:
                    pass  # logged once by the launcher; nothing was written: written here instead
                else:
                    self._lifecycle("offloaded", ledger_id, uuid=ticket.uuid)
                    self.complete_offload(ticket)
                    return
            offloader = self._offloaders.for_settings(
                dict(ticket.settings), max_block_size=ticket.max_block_size, read_buffer_size=ticket.read_buffer_size
            )
            handle = SealedLedgerReadHandle(
                ledger_id, ticket.entries, ticket.size, managed_ledger=self.name, ctime_ms=ticket.ctime_ms,
                read=lambda first, last: self._read_hot(ledger_id, first, last),
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
        (:func:`~offload_core.managed_ledger.lifecycle.offload_ticket.write_offload`).

        Raises :class:`OffloadError` if the ledger is not sealed or already
        offloaded, and the driver's errors if the configured store cannot
        be opened."""
        policies = self.policies()
        _, settings = self._offloaders.for_policies(policies)
        # As Pulsar's managed ledger passes it: the file-system offloader
        # finds a ledger's directory by it.
        settings = {**settings, "ManagedLedgerName": self.name}
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
            # Segments that streamed part of the ledger stay recorded, so they
            # are deleted with their last ledger rather than orphaned.
            segments = list(target.offloadContext.offloadSegment)
            target.ClearField("offloadContext")
            context = target.offloadContext
            context.offloadSegment.extend(segments)
            context.uidMsb, context.uidLsb = uid_halves(uid)
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
            entry_offsets=self._config.entry_offsets,
        )

    def complete_offload(self, ticket: OffloadTicket) -> None:
        """Step 3: mark the offload complete (compare-and-set, retried) once
        every object of the ledger is written. Raises :class:`OffloadError`
        if the ledger's recorded uid is no longer the ticket's."""
        uid = uuid_module.UUID(ticket.uuid)
        now = self._now_ms()

        def complete(info: ManagedLedgerInfo) -> None:
            context = self._find(info, ticket.ledger_id).offloadContext
            if not context.HasField("uidMsb") or uuid_of(context) != uid:
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
            if context.complete or not context.HasField("uidMsb") or str(uuid_of(context)) != ticket.uuid:
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
        with self._metadata_lock:
            # The version this ledger last wrote, as for its metadata record:
            # no read before each write unless someone else wrote meanwhile.
            version, self._status_version = self._status_version, None
            try:
                stored = self._write_status(path, value, version)
            except (ConflictError, NotFoundError):
                if version is None:
                    raise
                stored = self._write_status(path, value, None)
            self._status_version = stored.version

    def _write_status(self, path: str, value: bytes, version: int | None) -> Versioned:
        if version is None:
            record = self._store.get(path)
            if record is None:
                return self._store.create(path, value)
            version = record.version
        return self._store.set(path, value, version)

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
