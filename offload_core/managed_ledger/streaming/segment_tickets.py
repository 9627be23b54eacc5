"""Streaming-offload backfill in steps that may run in different processes
(the Spark backfill job), like :mod:`offload_ticket` for whole ledgers.

The managed ledger cuts its sealed, not yet offloaded entries into
segments of the configured size (:func:`split_into_segments`: a binary
search over entry positions in each ledger's offsets, never a scan) and
*assigns* each segment in its metadata; anything that reaches the hot-tier
files and the store *writes* a segment (:func:`write_segment`); the managed
ledger then *completes* it, or abandons it (objects deleted, assignment
dropped). A crash in between leaves assigned segments, deleted when the
topic is next opened.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import ConfigError, OffloadError
from ...formats import pulsar_v1 as v1
from ...offload.ledger import StreamingOffloader
from ...offload.segments.streaming_offload import OfferResult, OffloadHandle, SegmentLimits, StreamingOffloadResult
from ...plugins import PluginManager, default_plugin_manager
from ..hot.ledger_file import LedgerFile
from ..lifecycle.offloaders import OffloaderProvider

__all__ = ["LedgerRun", "SegmentTicket", "split_into_segments", "write_segment"]

_BATCH_BYTES = 1 << 20


@dataclass(frozen=True)
class LedgerRun:
    """Entries ``first_entry_id..last_entry_id`` of a sealed ledger, and its hot-tier file."""

    ledger_id: int
    first_entry_id: int
    last_entry_id: int
    hot_file: str


@dataclass(frozen=True)
class SegmentTicket:
    """A segment assigned in the metadata, to be written. Small and picklable."""

    managed_ledger: str
    uuid: str
    runs: tuple[LedgerRun, ...]
    ledger_infos: tuple[tuple[int, bytes], ...]
    data_dir: str
    settings: tuple[tuple[str, str], ...]
    block_size: int
    buffer_size: int
    read_buffer_size: int
    entry_offsets: bool = True


def split_into_segments(
    ledgers: Sequence[tuple[int, int, int]],
    payload_bytes: Callable[[int, int, int], int],
    *,
    segment_size: int,
    block_size: int,
) -> list[list[tuple[int, int, int]]]:
    """Cut ``ledgers`` (``(ledger id, first entry, end)``, ``end`` exclusive,
    in order) into segments of about ``segment_size`` bytes: each a list of
    ``(ledger id, first, last)`` runs. ``payload_bytes(ledger, first, end)``
    gives a range's payload bytes from its offsets. A run costs its payload,
    12 bytes an entry, and a block for headers and the padding of its last
    block; where a ledger does not fit what is left of a segment, the split
    point is found by binary search. Every segment holds at least one entry."""

    def cost(ledger_id: int, first: int, end: int) -> int:
        return payload_bytes(ledger_id, first, end) + (end - first) * v1.ENTRY_HEADER_LENGTH + block_size

    segments: list[list[tuple[int, int, int]]] = []
    current: list[tuple[int, int, int]] = []
    room = segment_size
    for ledger_id, first, end in ledgers:
        while first < end:
            whole = cost(ledger_id, first, end)
            if whole <= room:
                current.append((ledger_id, first, end - 1))
                room -= whole
                break
            low, high = first, end - 1  # the largest split end in (first, end) that fits
            while low < high:
                middle = (low + high + 1) // 2
                if cost(ledger_id, first, middle) <= room:
                    low = middle
                else:
                    high = middle - 1
            split = low if low > first else (first + 1 if not current else first)
            if split > first:
                current.append((ledger_id, first, split - 1))
                first = split
            segments.append(current)
            current, room = [], segment_size
    if current:
        segments.append(current)
    return segments


def write_segment(
    ticket: SegmentTicket,
    plugin_manager: PluginManager | None = None,
    *,
    driver_options: Mapping[str, Any] | None = None,
) -> StreamingOffloadResult:
    """Write the segment of ``ticket`` from the sealed hot-tier files, with
    ``driver_options`` (credentials) for a cloud store's driver, as
    :func:`~offload_core.managed_ledger.lifecycle.offload_ticket.write_offload`.

    Raises :class:`OffloadError` if a file does not hold the entries the
    ticket names, :class:`FormatError` if one is corrupt, and the store's
    errors; a failed write leaves no object."""
    manager = plugin_manager or default_plugin_manager()
    provider = OffloaderProvider(manager, Path(ticket.data_dir), manager.emit, entry_offsets=ticket.entry_offsets,
                                 driver_options=driver_options)  # fmt: skip
    try:
        offloader = provider.for_settings(
            dict(ticket.settings), max_block_size=ticket.block_size, read_buffer_size=ticket.read_buffer_size
        )
        if not isinstance(offloader, StreamingOffloader):
            raise ConfigError(f"the offloader for {dict(ticket.settings).get('driver')!r} cannot stream segments")
        infos = dict(ticket.ledger_infos)
        # The ticket says what the segment holds: neither size nor age closes it early.
        limits = SegmentLimits(streaming_block_size=ticket.block_size, max_segment_size=2**62,
                               max_segment_age=float("inf"), max_buffer_size=ticket.buffer_size)  # fmt: skip
        handle = offloader.streaming_offload(ticket.uuid, dict(ticket.settings), limits=limits,
                                             ledger_info=lambda ledger_id, _last: infos[ledger_id])  # fmt: skip
        try:
            for run in ticket.runs:
                _offer_run(handle, run)
        except BaseException:
            handle.abort()
            raise
        handle.close()
        result = handle.result()
        if result is None:
            raise OffloadError(f"segment {ticket.uuid} of {ticket.managed_ledger} came out empty")
        return result
    finally:
        provider.close()


def _offer_run(handle: OffloadHandle, run: LedgerRun) -> None:
    ledger = LedgerFile.open(Path(run.hot_file), run.ledger_id, repair=False)
    try:
        if ledger.last_entry_id < run.last_entry_id:
            raise OffloadError(
                f"hot-tier file of ledger {run.ledger_id} ends at entry {ledger.last_entry_id}, the segment was "
                f"assigned entries up to {run.last_entry_id}"
            )
        at = run.first_entry_id
        while at <= run.last_entry_id:
            average = max(1, ledger.payload_bytes(at, at + 1))
            last = min(run.last_entry_id, at + max(1, _BATCH_BYTES // average) - 1)
            batch = ledger.read(at, last)
            offered = 0
            while offered < len(batch):
                taken, outcome = handle.offer_entries(batch[offered:])
                offered += taken
                if outcome is OfferResult.FAIL_BUFFER_FULL:
                    time.sleep(0.001)  # the upload makes room; this task has nothing else to do
                elif outcome is not OfferResult.SUCCESS:
                    raise OffloadError(f"segment {handle.uuid} refused entry {run.ledger_id}:{at + offered}: "
                                       f"{outcome.value}")  # fmt: skip
            at = last + 1
    finally:
        ledger.close()
