"""Offloading a sealed ledger in three steps that may run in different processes.

The managed ledger *prepares* an offload (records its uid, ``complete=false``),
anything that can reach the hot-tier file and the store *writes* the objects
(:func:`write_offload`, e.g. a Spark task), and the managed ledger then
*completes* it with compare-and-set, or abandons it (objects deleted, uid
cleared). A crash between the steps is cleaned up when the ledger is
reopened, as for a local offload.
"""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import OffloadError
from ...formats.pulsar_v1 import closed_ledger_metadata
from ...model import Entry
from ...offload.ledger import OffloadResult
from ...offload.reading.read_handle import LedgerMetadataView
from ...plugins import PluginManager, default_plugin_manager
from ..hot.ledger_file import LedgerFile
from .offloaders import OffloaderProvider

__all__ = ["OffloadTicket", "SealedLedgerReadHandle", "write_offload"]


@dataclass(frozen=True)
class OffloadTicket:
    """A prepared offload of one sealed ledger. Small and picklable."""

    managed_ledger: str
    ledger_id: int
    uuid: str
    entries: int
    size: int
    hot_file: str
    data_dir: str
    settings: tuple[tuple[str, str], ...]
    max_block_size: int
    read_buffer_size: int
    ctime_ms: int
    entry_offsets: bool = True


class SealedLedgerReadHandle(LedgerMetadataView):
    """A ReadHandle over a sealed hot-tier ledger, for the offloader; its
    BookKeeper metadata names the managed ledger, as Pulsar's does."""

    def __init__(
        self,
        ledger_id: int,
        entries: int,
        size: int,
        *,
        managed_ledger: str,
        ctime_ms: int,
        read: Callable[[int, int], list[Entry]],
    ) -> None:
        self._ledger_id = ledger_id
        self._read = read
        self._metadata = closed_ledger_metadata(
            length=size,
            last_entry_id=entries - 1,
            ctime_ms=ctime_ms,
            custom=[("pulsar/managed-ledger", managed_ledger.encode()), ("application", b"offload-core")],
        )

    def read(self, first: int, last: int) -> list[Entry]:
        return self._read(first, last)

    def close(self) -> None:
        """Nothing to release: whoever opened the file closes it."""


def write_offload(
    ticket: OffloadTicket,
    plugin_manager: PluginManager | None = None,
    *,
    driver_options: Mapping[str, Any] | None = None,
) -> OffloadResult:
    """Write the objects of a prepared offload from the sealed hot-tier file,
    with ``driver_options`` (credentials) for a cloud store's driver: a
    ticket never holds them, as the ledger's metadata never records them.

    Raises :class:`OffloadError` if the file does not hold what the ticket
    says (it changed or was trimmed), :class:`FormatError` if it is corrupt,
    and the offloader's errors; a failed write leaves no objects."""
    manager = plugin_manager or default_plugin_manager()
    provider = OffloaderProvider(manager, Path(ticket.data_dir), manager.emit, entry_offsets=ticket.entry_offsets,
                                 driver_options=driver_options)  # fmt: skip
    try:
        offloader = provider.for_settings(
            dict(ticket.settings), max_block_size=ticket.max_block_size, read_buffer_size=ticket.read_buffer_size
        )
        ledger = LedgerFile.open(Path(ticket.hot_file), ticket.ledger_id, repair=False)
        try:
            if (ledger.entry_count, ledger.length) != (ticket.entries, ticket.size):
                raise OffloadError(
                    f"hot-tier file of ledger {ticket.ledger_id} holds {ledger.entry_count} entries and "
                    f"{ledger.length} bytes, the offload was prepared for {ticket.entries} and {ticket.size}"
                )
            handle = SealedLedgerReadHandle(
                ticket.ledger_id, ticket.entries, ticket.size,
                managed_ledger=ticket.managed_ledger, ctime_ms=ticket.ctime_ms, read=ledger.read,
            )  # fmt: skip
            return offloader.offload(
                handle, uuid_module.UUID(ticket.uuid), {"ManagedLedgerName": ticket.managed_ledger}
            )
        finally:
            ledger.close()
    finally:
        provider.close()
