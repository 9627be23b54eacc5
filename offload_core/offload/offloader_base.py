"""What our ledger offloaders share (the blob-store one in
:mod:`offload_core.offload.ledger`, the MapFile one in
:mod:`offload_core.offload.mapfile`): the counted and reported storage
driver, the key prefix and the driver metadata naming both, the read-ahead
pool an offloader closes only if it made it, events, and one offload
attempt's reporting and clean-up. The contract itself is
:class:`~offload_core.offload.ledger.LedgerOffloader`; this is one way to
keep it, not a part of it."""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..errors import OffloadError, StateError
from ..hooks import Event
from ..instrument import InstrumentedDriver, RequestCounts
from ..proto import LedgerMetadataFormat
from ..storage import StorageDriver
from .reading.read_ahead import ReadAheadPool
from .reading.read_handle import ReadHandle

__all__ = ["OffloaderBase"]


class OffloaderBase:
    """Every storage request through ``driver`` is counted
    (:attr:`requests`) and, with ``emit``, reported as a
    ``storage.request`` event; sequential reads are served from
    ``read_ahead`` (a pool of its own when not given, which :meth:`close`
    closes)."""

    def __init__(
        self,
        driver: StorageDriver,
        *,
        prefix: str,
        emit: Callable[[Event], None] | None,
        read_ahead: ReadAheadPool | None,
    ) -> None:
        self.driver = InstrumentedDriver(driver, emit)
        self.prefix = prefix
        self._emit = emit
        self._owns_read_ahead = read_ahead is None
        self.read_ahead = ReadAheadPool() if read_ahead is None else read_ahead

    @property
    def requests(self) -> RequestCounts:
        """Storage requests made so far."""
        return self.driver.counts

    def driver_metadata(self) -> dict[str, str]:
        """What to record in ``OffloadContext.driverMetadata``: the driver
        and the key prefix, passed back to reads and deletes."""
        return {"driver": self.driver.name or type(self.driver.inner).__name__, "prefix": self.prefix}

    def close(self) -> None:
        if self._owns_read_ahead:
            self.read_ahead.close()
        self.driver.close()

    def _event(self, kind: str, **fields: object) -> None:
        if self._emit is not None:
            self._emit(Event(kind, fields))

    def _delete(self, keys: list[str]) -> None:
        """Delete ``keys`` (idempotent); raises what the driver raises."""
        self.driver.delete(keys)

    @staticmethod
    def _check_offloadable(handle: ReadHandle) -> None:
        """:class:`StateError` for an open or empty ledger."""
        if handle.metadata.state != LedgerMetadataFormat.CLOSED:
            raise StateError(f"ledger {handle.ledger_id} is not closed; only sealed ledgers can be offloaded")
        if handle.last_entry_id < 0:
            raise StateError(f"ledger {handle.ledger_id} is empty; there is nothing to offload")

    @contextmanager
    def _offloading(self, ledger_id: int, uuid: uuid_module.UUID | str, key: str, written: list[str]) -> Iterator[None]:
        """One offload attempt, reported as ``offload.started`` (under
        ``key``) and, if the block raises, ``offload.failed`` after every
        key in ``written`` is deleted (a failed deletion is noted on the
        error, which propagates). ``offload.finished`` is the caller's to
        report."""
        self._event("offload.started", ledger_id=ledger_id, uuid=str(uuid), key=key)
        try:
            yield
        except BaseException as exc:
            try:
                self._delete(written)
            except OffloadError as cleanup:
                exc.add_note(
                    f"cleanup after the failed offload of ledger {ledger_id} also failed ({cleanup}); "
                    f"delete {written} by hand or with `offload ledgers rm`"
                )
            self._event("offload.failed", ledger_id=ledger_id, uuid=str(uuid), error=type(exc).__name__)
            raise
