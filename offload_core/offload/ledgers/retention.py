"""A v1 ledger's age for retention: its creation time (``ctime``) in the
BookKeeper metadata inside its index object. What retention decides is in
:mod:`..stored.retention`, for offloads of every kind."""

from __future__ import annotations

from ...errors import FormatError, NotFoundError
from ...formats import pulsar_v1 as v1
from ...storage import StorageDriver
from .inventory import OffloadedLedger

__all__ = ["ledger_ctime_ms"]


def ledger_ctime_ms(driver: StorageDriver, ledger: OffloadedLedger) -> int | None:
    """The ledger's creation time from its index; ``None`` if unknown."""
    if ledger.index is None:
        return None
    try:
        ctime = int(v1.decode_index(driver.read(ledger.index_key)).metadata().ctime)
    except (FormatError, NotFoundError):
        return None
    return ctime or None  # ledgers written without a creation time
