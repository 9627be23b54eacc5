"""Reading a managed ledger across tiers, under the four tiered read
priorities (Pulsar's), with the fallback rules of the ``*_FIRST`` ones."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ...errors import (
    ConfigError,
    ConflictError,
    InvalidRangeError,
    KeyUnavailableError,
    OffloadError,
    StateError,
    TransformNotInstalledError,
)
from ...hooks import Event
from ...model import Entry, Position
from ...proto import OffloadContext
from ..hot.ledger_file import LedgerFile
from ..lifecycle.ledger_records import Tier, TieredEntry
from ..lifecycle.policies import ReadPriority
from .ledger_read_ahead import LedgerReadAhead

log = logging.getLogger(__name__)

# Errors that say the request or the setup is wrong, not the tier: *_FIRST
# falls back on storage and format failures, and on what an offloaded
# object needs and this process lacks (a key, a transform's plugin): the
# hot copy needs neither.
_NO_FALLBACK = (ConfigError, InvalidRangeError, StateError, ConflictError)
_FALLBACK_ALL_THE_SAME = (KeyUnavailableError, TransformNotInstalledError)
# A read whose ledger changes tiers underneath it is planned again, a few times at most.
_REPLANS = 3


class TieredReads(LedgerReadAhead):
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
        replans = 0
        while len(results) < count:
            with self._lock:  # what to read is decided under the lock; the reading happens outside it
                step = self._next_step(at, count - len(results))
            if step is None:
                break
            if isinstance(step, Position):
                at = step
                continue
            ledger_id, first, end, current, context = step
            started = time.perf_counter()
            try:
                entries, tier = self._read_ledger(ledger_id, first, end, chosen, current, context)
            except (OffloadError, OSError) as exc:
                replans += 1
                if replans > _REPLANS or not self._changed_underneath(ledger_id, context, exc):
                    raise
                continue  # its tiers changed while it was read (hot copy deleted, say): plan it again
            self.read_stats.served[tier] += len(entries)
            # One event per ledger read (a consumer batch), never per entry.
            self._emit(Event("read.served", {"managed_ledger": self.name, "ledger_id": ledger_id, "tier": tier,
                                             "entries": len(entries), "bytes": sum(len(e.data) for e in entries),
                                             "seconds": time.perf_counter() - started}))  # fmt: skip
            results.extend(TieredEntry(entry, tier) for entry in entries)
            at = Position(ledger_id, end + 1)
        return results

    def _changed_underneath(self, ledger_id: int, context: OffloadContext | None, exc: BaseException) -> bool:
        """After a failed read outside the lock: raise
        :class:`InvalidRangeError` if the ledger was trimmed meanwhile; true
        if its offload state changed meanwhile (worth planning again)."""
        with self._lock:
            ledger = self._ledgers_by_id.get(ledger_id)
            if ledger is None or ledger_id in self._trimming:
                raise InvalidRangeError(
                    f"managed ledger {self.name}: ledger {ledger_id} was trimmed while it was being read"
                ) from exc
            if context is None:  # it was the current ledger: did it get sealed meanwhile?
                return self._current is None or self._current.ledger_id != ledger_id
            return bool(ledger.offloadContext != context)

    def _next_step(
        self, at: Position, wanted: int
    ) -> None | Position | tuple[int, int, int, LedgerFile | None, OffloadContext | None]:
        """Under the lock: where reading goes on from ``at`` (``None``: the
        end; a :class:`Position`: the next ledger), or what to read: ledger,
        first and last entry, and a snapshot of what routing it needs (the
        current ledger's file, or the ledger's offload context)."""
        ids = self._ledger_ids
        if at.ledger_id not in self._ledgers_by_id:
            if not ids or at.ledger_id > ids[-1]:
                return None
            raise InvalidRangeError(
                f"managed ledger {self.name} has no ledger {at.ledger_id} (trimmed, or never existed)"
            )
        last = self._last_entry_id(at.ledger_id)
        if at.entry_id > last:
            following = ids.index(at.ledger_id) + 1
            return None if following == len(ids) else Position(ids[following], 0)
        end = min(last, at.entry_id + wanted - 1)
        if self._current is not None and self._current.ledger_id == at.ledger_id:
            return at.ledger_id, at.entry_id, end, self._current, None
        context = OffloadContext()
        context.CopyFrom(self._ledgers_by_id[at.ledger_id].offloadContext)
        return at.ledger_id, at.entry_id, end, None, context

    def first_available(self, position: Position) -> Position:
        """``position`` if its ledger still exists, else the start of the
        next ledger that does (ledgers before it were trimmed)."""
        with self._lock:
            ids = [ledger.ledgerId for ledger in self._info.ledgerInfo]
        if position.ledger_id in ids:
            return position
        later = [ledger_id for ledger_id in ids if ledger_id > position.ledger_id]
        return Position(later[0], 0) if later else position

    def _read_ledger(
        self,
        ledger_id: int,
        first: int,
        last: int,
        priority: ReadPriority,
        current: LedgerFile | None,
        context: OffloadContext | None,
    ) -> tuple[list[Entry], Tier]:
        if current is not None or context is None:
            if priority is ReadPriority.OFFLOADED_ONLY:
                raise StateError(f"ledger {ledger_id} of {self.name} is still being written; {_only(priority)}")
            return self._read_hot(ledger_id, first, last), "hot"  # the current one, or sealed meanwhile
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
            return self._read_offloaded(ledger_id, first, last, context, priority), "offloaded"
        order: dict[ReadPriority, list[Tier]] = {
            ReadPriority.OFFLOADED_FIRST: ["offloaded", "hot"],
            ReadPriority.BOOKKEEPER_FIRST: ["hot", "offloaded"],
            ReadPriority.OFFLOADED_ONLY: ["offloaded"],
            ReadPriority.BOOKKEEPER_ONLY: ["hot"],
        }
        tiers = order[priority]
        readers: dict[Tier, Callable[[int, int, int], list[Entry]]] = {
            "hot": self._read_hot,
            "offloaded": lambda ledger, start, stop: self._read_offloaded(ledger, start, stop, context, priority),
        }
        try:
            return readers[tiers[0]](ledger_id, first, last), tiers[0]
        except (OffloadError, OSError) as exc:
            if isinstance(exc, _NO_FALLBACK) and not isinstance(exc, _FALLBACK_ALL_THE_SAME):
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

    def _read_offloaded(
        self, ledger_id: int, first: int, last: int, context: OffloadContext, priority: ReadPriority
    ) -> list[Entry]:
        """Read an offloaded ledger outside the ledger's lock: the handle is
        taken from the shared cache (opened if needed) and given back. A
        read ending in the ledger's last block has the next ledger read
        ahead."""
        with self._lock:
            self._prefetched_ledgers.discard(ledger_id)  # being read: a later replay prefetches it again
        shared = self._shared_offloaded(ledger_id, context)
        broken = False
        try:
            with shared.read_lock:
                entries = shared.handle.read(first, last)
                self._prefetch_following(ledger_id, shared.handle, last, priority)
                return entries
        except OffloadError:
            broken = True
            raise
        finally:
            with self._lock:
                self._offloaded.give_back(shared, broken=broken)


def _only(priority: ReadPriority) -> str:
    return f"read priority {priority.name} never reads the other tier (choose a *_FIRST priority to fall back)"
