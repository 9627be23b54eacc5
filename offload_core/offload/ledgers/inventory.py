"""Finding offloaded ledgers in a store by their object keys."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from ...errors import ConfigError, NotFoundError
from ...formats import pulsar_v1 as v1
from ...model import ObjectInfo
from ...storage import StorageDriver
from ..listing_pairs import INDEX_SUFFIX, ListingPairs

__all__ = [
    "LedgerCopy",
    "OffloadedLedger",
    "complete_ledgers_of",
    "find_offloaded_ledgers",
    "index_key_of",
    "select_ledger",
    "sorted_copies",
    "stream_complete_ledgers",
]


@dataclass(frozen=True)
class OffloadedLedger:
    """One offload attempt of a ledger: its two objects, either may be missing."""

    prefix: str
    uuid: str
    ledger_id: int
    data: ObjectInfo | None
    index: ObjectInfo | None

    @property
    def complete(self) -> bool:
        return self.data is not None and self.index is not None

    @property
    def data_key(self) -> str:
        return self.prefix + v1.data_key(self.uuid, self.ledger_id)

    @property
    def index_key(self) -> str:
        return self.prefix + v1.index_key(self.uuid, self.ledger_id)


def group_ledgers(objects: Iterable[ObjectInfo]) -> list[OffloadedLedger]:
    """Pair data and index objects by (prefix, uuid, ledger id); other keys
    are ignored. Sorted by ledger id, then prefix and uuid."""
    found: dict[tuple[str, str, int], dict[bool, ObjectInfo]] = {}
    for info in objects:
        parsed = v1.parse_key(info.key)
        if parsed is not None:
            found.setdefault((parsed.prefix, parsed.uuid, parsed.ledger_id), {})[parsed.is_index] = info
    return [
        OffloadedLedger(prefix, uuid, ledger_id, pair.get(False), pair.get(True))
        for (prefix, uuid, ledger_id), pair in sorted(found.items(), key=lambda item: (item[0][2], item[0][:2]))
    ]


def find_offloaded_ledgers(driver: StorageDriver, prefix: str = "") -> list[OffloadedLedger]:
    """Every offloaded ledger (complete or not) whose keys start with ``prefix``."""
    return group_ledgers(driver.list(prefix))


class LedgerCopy(NamedTuple):
    """One complete offload of a ledger (both its objects are there), kept
    as little as a plan over a whole store can hold per ledger: the data
    object's key, where the uuid starts in it, and the data object's
    stored size (as listed: 0 when the finder does not keep it)."""

    data_key: str
    ledger_id: int
    uuid_at: int
    size: int = 0

    @property
    def uuid(self) -> str:
        return self.data_key[self.uuid_at : self.uuid_at + _UUID_LENGTH]

    @property
    def prefix(self) -> str:
        return self.data_key[: self.uuid_at]

    @property
    def index_key(self) -> str:
        return index_key_of(self.data_key)


def index_key_of(data_key: str) -> str:
    """The index object's key of the whole-ledger data object ``data_key``."""
    return data_key + INDEX_SUFFIX


_UUID_LENGTH = 36


def sorted_copies(copies: Iterable[LedgerCopy]) -> list[LedgerCopy]:
    """``copies`` by ledger id, then prefix and uuid, as
    :func:`group_ledgers` sorts."""
    return sorted(copies, key=lambda copy: (copy.ledger_id, copy.prefix, copy.uuid))


def stream_complete_ledgers(objects: Iterable[ObjectInfo]) -> Iterator[LedgerCopy]:
    """The complete offloads among ``objects``, a listing sorted by key
    (as every driver lists), each as soon as its index is listed, in the
    listing's order, holding only the data objects still waiting for their
    index (see :mod:`offload_core.offload.listing_pairs`).

    Raises :class:`StateError` if the listing is not sorted (a driver
    breaking its contract), rather than miss a ledger."""
    return complete_ledgers_of((info, v1.parse_key(info.key)) for info in objects)


def complete_ledgers_of(listing: Iterable[tuple[ObjectInfo, v1.LedgerKey | None]]) -> Iterator[LedgerCopy]:
    """:func:`stream_complete_ledgers` of a sorted listing whose keys the
    caller parsed already, each record with its key's
    :func:`~offload_core.formats.pulsar_v1.parse_key`: each key parsed
    once. Raises what :func:`stream_complete_ledgers` raises."""
    pairs = ListingPairs()
    for info, parsed in listing:
        pair = pairs.feed(info, None if parsed is None else parsed.is_index)
        if pair is not None:
            assert parsed is not None  # an index completed the pair; its key says what the data key's does
            yield LedgerCopy(pair[0], parsed.ledger_id, len(parsed.prefix), pair[1])


def select_ledger(ledgers: Iterable[OffloadedLedger], ledger_id: int, uuid: str | None = None) -> OffloadedLedger:
    """The one offload of ``ledger_id`` (and ``uuid``, if given).

    Raises :class:`NotFoundError` if there is none and :class:`ConfigError`
    if several offload attempts exist and no ``uuid`` chooses one."""
    matches = [ledger for ledger in ledgers if ledger.ledger_id == ledger_id and (uuid is None or ledger.uuid == uuid)]
    if not matches:
        which = f"ledger {ledger_id}" + (f" with uuid {uuid}" if uuid else "")
        raise NotFoundError(f"no offloaded {which} found; list what is there with `offload ledgers ls`")
    if len(matches) > 1:
        listing = ", ".join(f"{m.prefix}{m.uuid} ({'complete' if m.complete else 'incomplete'})" for m in matches)
        raise ConfigError(f"ledger {ledger_id} was offloaded {len(matches)} times: {listing}; choose one with --uuid")
    return matches[0]
