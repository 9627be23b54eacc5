"""Reading a managed ledger across tiers, under the four tiered read
priorities (Pulsar's), with the fallback rules of the ``*_FIRST`` ones."""

from __future__ import annotations

import logging

from ..errors import (
    ConfigError,
    ConflictError,
    InvalidRangeError,
    OffloadError,
    StateError,
)
from ..hooks import Event
from ..model import Entry, Position
from .ledger_core import LedgerCore
from .ledger_records import Tier, TieredEntry, driver_metadata, uuid_of
from .policies import ReadPriority

log = logging.getLogger(__name__)

_OFFLOADED_HANDLES_OPEN = 16
# Errors that say the request or the setup is wrong, not the tier: *_FIRST
# falls back on storage and format failures only.
_NO_FALLBACK = (ConfigError, InvalidRangeError, StateError, ConflictError)


class TieredReads(LedgerCore):
    """Reads by position, whichever tier holds each ledger."""

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

    def _read_offloaded(self, ledger_id: int, first: int, last: int) -> list[Entry]:
        handle = self._offloaded.get(ledger_id)
        if handle is None:
            context = self._ledger_info(ledger_id).offloadContext
            offloader = self._offloader_for_context(context)
            handle = offloader.read_offloaded(ledger_id, uuid_of(context), driver_metadata(context))
            self._offloaded[ledger_id] = handle
            if len(self._offloaded) > _OFFLOADED_HANDLES_OPEN:
                self._offloaded.popitem(last=False)[1].close()
        self._offloaded.move_to_end(ledger_id)
        try:
            return handle.read(first, last)
        except OffloadError:
            self._offloaded.pop(ledger_id, None)
            raise


def _only(priority: ReadPriority) -> str:
    return f"read priority {priority.name} never reads the other tier (choose a *_FIRST priority to fall back)"
