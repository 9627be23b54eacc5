"""The ReadHandle protocol (BookKeeper's, as PIP-17 uses it) and an
in-memory implementation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ...errors import InvalidRangeError, StateError
from ...formats.pulsar_v1 import closed_ledger_metadata
from ...model import Entry
from ...proto import LedgerMetadataFormat

__all__ = ["InMemoryReadHandle", "LedgerMetadataView", "PrefetchingHandle", "ReadHandle", "check_read_range"]


@runtime_checkable
class ReadHandle(Protocol):
    """Read access to one ledger.

    ``read(first, last)`` returns entries ``first..last`` inclusive, in
    order; it raises :class:`InvalidRangeError` when ``first > last``,
    ``first < 0`` or ``last > last_entry_id``. An offloader may call
    ``read`` from a thread other than the one that opened the handle (it
    reads the next block while the current one is written), one call at a
    time and never after its ``offload`` has returned.
    """

    @property
    def ledger_id(self) -> int: ...

    @property
    def metadata(self) -> LedgerMetadataFormat: ...

    @property
    def last_entry_id(self) -> int: ...

    @property
    def length(self) -> int: ...

    def read(self, first: int, last: int) -> list[Entry]: ...

    def close(self) -> None: ...


@runtime_checkable
class PrefetchingHandle(Protocol):
    """A read handle the broker can have read ahead of a reader crossing
    into its ledger: ``in_last_block(entry_id)`` says whether a reader at
    ``entry_id`` is near the ledger's end (so the next ledger's prefetch is
    due), ``prefetch(entry_id)`` starts reading ahead from ``entry_id``
    without waiting (False when it did not). Any offloader's read handle
    takes part by having both (two methods: a cheap ``isinstance``)."""

    def in_last_block(self, entry_id: int) -> bool: ...

    def prefetch(self, entry_id: int) -> bool: ...


def check_read_range(ledger_id: int, first: int, last: int, last_entry_id: int) -> None:
    """Raise :class:`InvalidRangeError` unless ``0 <= first <= last <= last_entry_id``."""
    if first < 0 or first > last or last > last_entry_id:
        raise InvalidRangeError(
            f"ledger {ledger_id}: cannot read entries {first}..{last}; valid ids are 0..{last_entry_id}"
        )


class LedgerMetadataView:
    """The ReadHandle properties that come from the ledger's metadata; a
    subclass sets ``_ledger_id`` and ``_metadata``."""

    _ledger_id: int
    _metadata: LedgerMetadataFormat

    @property
    def ledger_id(self) -> int:
        return self._ledger_id

    @property
    def metadata(self) -> LedgerMetadataFormat:
        return self._metadata

    @property
    def last_entry_id(self) -> int:
        return int(self._metadata.lastEntryId)

    @property
    def length(self) -> int:
        return int(self._metadata.length)


class InMemoryReadHandle(LedgerMetadataView):
    """A closed ledger over a list of byte strings (entry ``i`` is ``entries[i]``).

    ``metadata`` defaults to closed-ledger BookKeeper metadata whose length
    and last entry id match ``entries``.
    """

    def __init__(self, ledger_id: int, entries: Sequence[bytes], metadata: LedgerMetadataFormat | None = None) -> None:
        self._ledger_id = ledger_id
        self._entries = list(entries)
        if metadata is None:
            metadata = closed_ledger_metadata(
                length=sum(len(entry) for entry in self._entries), last_entry_id=len(self._entries) - 1
            )
        self._metadata = metadata
        self._closed = False

    def read(self, first: int, last: int) -> list[Entry]:
        if self._closed:
            raise StateError(f"ledger {self._ledger_id}: read handle is closed")
        check_read_range(self._ledger_id, first, last, min(self.last_entry_id, len(self._entries) - 1))
        return [Entry(self._ledger_id, entry_id, self._entries[entry_id]) for entry_id in range(first, last + 1)]

    def close(self) -> None:
        self._closed = True
