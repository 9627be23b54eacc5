"""Offloads left unfinished by a crash or a failure: listed, cleaned up
(objects deleted, then the uid cleared) in the background or by hand, and
the files killed writers left in the store swept. None of it
ever blocks the ledger."""

from __future__ import annotations

import logging

from ...errors import StateError
from ...formats import pulsar_v1 as v1
from ...hooks import Event
from ..ledger_core import LedgerCore
from .ledger_records import UnfinishedOffload, clear_context, driver_metadata, uuid_of

log = logging.getLogger(__name__)


class UnfinishedOffloads(LedgerCore):
    """Finding and cleaning up offloads that were prepared and never completed."""

    def sweep_leftovers(self) -> int:
        """Remove the files killed writers left in the store the policies
        name: at once when their run has provably ended, else once they are
        older than ``managedLedgerOffloadLeftoverGraceSeconds`` by the
        broker's clock; never one a live writer holds. Best effort, logged.
        Returns how many were removed."""
        try:
            swept = self._offloaders.sweep_leftovers(self.policies(), now=self._clock(),
                                                     grace=self._config.leftover_grace_seconds)  # fmt: skip
        except Exception as exc:
            log.warning("sweeping leftover files of killed writers for %s failed: %s", self.name, exc)
            return 0
        if swept:
            log.info("removed %d leftover file(s) of killed writers for %s", len(swept), self.name)
            self._emit(Event("storage.swept", {"managed_ledger": self.name, "files": len(swept),
                                               "bytes": sum(t.size for t in swept)}))  # fmt: skip
        return len(swept)

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
                    uuid=str(uuid_of(ledger.offloadContext)),
                    settings=driver_metadata(ledger.offloadContext),
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
                uid = uuid_of(context)
                settings = driver_metadata(context)
                log.warning("clearing ledger %s's offload %s without deleting its objects: %s", ledger_id, uid, exc)
                prefix = settings.get("prefix", "")
                left = [prefix + v1.data_key(str(uid), ledger_id), prefix + v1.index_key(str(uid), ledger_id)]
                self._update(lambda info: clear_context(info, ledger_id, uid))
                self._cleanup_errors.pop(ledger_id, None)
                self._lifecycle("cleared-forced", ledger_id, uuid=str(uid), left=left)
                return left
            self._cleanup_errors.pop(ledger_id, None)
            return []

    def _clean_unfinished_offload(self, ledger_id: int) -> None:
        context = self._ledger_info(ledger_id).offloadContext
        uid = uuid_of(context)
        offloader = self._offloader_for_context(context)
        offloader.delete_offloaded(ledger_id, uid, driver_metadata(context))
        self._update(lambda info: clear_context(info, ledger_id, uid))
        self._lifecycle("cleaned-unfinished", ledger_id, uuid=str(uid))
