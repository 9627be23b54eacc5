"""The ``pulsar-offload`` source's partitions over offloads of the kinds
other offloaders register (:class:`~offload_core.offload.stored.kinds.ReadableKind`,
a Hadoop MapFile ledger say): many small offloads of a kind packed into
one partition, as Spark packs small files, each read in its task through
the kind that found it, which travels with the partition.

A partition stays small whatever it holds: of a
:class:`~offload_core.offload.stored.kinds.LocatableKind` it names each
offload by its locator (a MapFile ledger's directory), the names and
wanted ledger ids compressed into one blob, and the task locates each
offload again on its own driver; a kind without locators has its offloads
carried whole."""

from __future__ import annotations

import json
import zlib
from array import array
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import InputPartition

from ..offload.stored.kinds import LocatableKind, Located, ReadableKind, StoredOffload
from ..storage import StorageDriver
from .column_bounds import ANY_VALUE, ColumnBounds
from .ledger_copies import refuse_second_copies
from .packing import packed
from .read_options import OPEN_COST_BYTES, ReadOptions

__all__ = [
    "BLOCK_RANGE_KINDS",
    "OffloadPartition",
    "ledger_entries",
    "located_offload",
    "plan_kind_partitions",
]

# Kinds the source reads in block-range partitions of its own (Arrow straight from the blocks).
BLOCK_RANGE_KINDS = frozenset({"pulsar-ledger", "pulsar-segment"})

EntryRanges = tuple[tuple[int, int | None], ...]
_WHOLE: EntryRanges = ((0, None),)


@dataclass(frozen=True)
class OffloadPartition(InputPartition):
    """Offloads of one kind, read in order in one task (the store is the
    reader's: see :func:`~offload_core.spark.vanished_objects.kind_entries`).
    ``packed`` holds, per offload, its locator (``None`` when ``offloads``
    carries it) and its ledgers to read; ``ranges`` the entry ranges of a
    ledger read in part (every other is read whole)."""

    kind: Any  # a ReadableKind
    packed: bytes
    offloads: tuple[StoredOffload, ...] = ()  # whole, in order, of a kind that is no LocatableKind
    ranges: tuple[tuple[int, EntryRanges], ...] = ()
    entry_bounds: ColumnBounds = ANY_VALUE
    publish_time_bounds: ColumnBounds = ANY_VALUE  # microseconds since the epoch

    @property
    def located(self) -> list[tuple[str | None, tuple[int, ...]]]:
        """Each offload's locator (``None``: in ``offloads``) and its ledgers to read, in order."""
        return [(locator, tuple(ledgers)) for locator, ledgers in json.loads(zlib.decompress(self.packed))]

    @property
    def ledger_ids(self) -> tuple[int, ...]:
        """The ledgers read, in order."""
        return tuple(ledger_id for _, ledgers in self.located for ledger_id in ledgers)

    def entry_ranges(self, ledger_id: int) -> EntryRanges:
        return dict(self.ranges).get(ledger_id, _WHOLE)

    def wants(self, entry_id: int, ranges: EntryRanges) -> bool:
        """Whether ``entry_id`` of a ledger is read: in the ledger's
        ``ranges`` (:meth:`entry_ranges`, looked up once a ledger) and the
        bounds."""
        in_range = any(first <= entry_id and (last is None or entry_id <= last) for first, last in ranges)
        return in_range and self.entry_bounds.admits(entry_id)


def plan_kind_partitions(
    options: ReadOptions,
    kinds: Sequence[Any],
    store: StorageDriver,
    *,
    skip_ledgers: Collection[int],
    ledger_bounds: ColumnBounds = ANY_VALUE,
    entry_bounds: ColumnBounds = ANY_VALUE,
    publish_time_bounds: ColumnBounds = ANY_VALUE,
) -> list[OffloadPartition]:
    """The wanted ledgers of every complete offload of the readable
    ``kinds`` (those without block-range partitions of their own) that
    ``store`` lists, but ``skip_ledgers`` (read from Pulsar's objects
    already); with ``ledgerUuids``, of a ledger only the offload of the
    uuid it names (a copy an abandoned offload left is not read twice).
    Consecutive offloads of a kind (in :meth:`located` order, a
    :class:`LocatableKind`'s, else :meth:`find` order: MapFile ledgers as
    their directories are listed) share a partition while their sizes,
    each plus :data:`~.read_options.OPEN_COST_BYTES`, fit
    ``bytesPerPartition``; one at least.

    Raises :class:`ConfigError` naming the uuids when, without
    ``ledgerUuids``, a wanted ledger has two complete offloads of these
    kinds (an abandoned one's and a retry's): read both, its entries would
    come twice."""
    readable = [kind for kind in kinds if kind.name not in BLOCK_RANGE_KINDS and isinstance(kind, ReadableKind)]

    def wanted(located: Located) -> list[int]:
        return [
            ledger_id for ledger_id in located.ledger_ids
            if ledger_id not in skip_ledgers and options.selection.wants_ledger(ledger_id)
            and ledger_bounds.admits(ledger_id)
            and (options.ledger_uuids is None or (ledger_id, located.uuid) in options.ledger_uuids)
        ]  # fmt: skip

    planned = array("q")  # each planned copy's ledger: a ledger twice is refused, as Pulsar's objects are
    partitions = []
    for kind in readable:
        found = ((located, offload, ledgers) for located, offload in _complete_offloads(kind, store)
                 if (ledgers := wanted(located)))  # fmt: skip
        for run in packed(found, (options.bytes_per_partition,), lambda item: (item[0].size + OPEN_COST_BYTES,)):
            group = [(None if offload is not None else located.locator, ledgers) for located, offload, ledgers in run]
            offloads = [offload for _, offload, _ in run if offload is not None]
            partitions.append(_packed(kind, group, offloads, options, entry_bounds, publish_time_bounds))
            planned.extend(ledger_id for _, _, ledgers in run for ledger_id in ledgers)
    refuse_second_copies(planned, options, lambda ledger_id: _uuids_of(readable, store, ledger_id))
    return partitions


def _uuids_of(kinds: Sequence[Any], store: StorageDriver, ledger_id: int) -> list[str]:
    """The uuids of the complete offloads of ``kinds`` holding ``ledger_id``
    (only to name them in an error)."""
    return [located.uuid for kind in kinds for located, _ in _complete_offloads(kind, store)
            if ledger_id in located.ledger_ids]  # fmt: skip


def _complete_offloads(kind: Any, store: StorageDriver) -> Iterator[tuple[Located, StoredOffload | None]]:
    """Every complete offload of ``kind`` in ``store``: of a
    :class:`LocatableKind` as it locates them alone (in :meth:`located`
    order), of another kind in :meth:`find` order with the offload
    itself, to carry whole."""
    if isinstance(kind, LocatableKind):
        yield from ((located, None) for located in kind.located(store, ""))
        return
    for found in kind.find(store, ""):
        if found.complete:
            # A kind whose keys name the ledgers needs no read here: its age, all describe adds, is no
            # part of a read.
            offload = found if found.ledger_ids else kind.describe(store, found)
            yield Located("", offload.uuid, offload.ledger_ids, offload.size), offload


def _packed(
    kind: Any,
    group: Sequence[tuple[str | None, Sequence[int]]],
    offloads: Sequence[StoredOffload],
    options: ReadOptions,
    entry_bounds: ColumnBounds,
    publish_time_bounds: ColumnBounds,
) -> OffloadPartition:
    """One partition of ``group``'s offloads (their locators and wanted
    ledgers), the ``offloads`` of a kind without locators carried whole."""
    ranges = tuple(
        (ledger_id, ranges)
        for _, ledgers in group
        for ledger_id in ledgers
        if (ranges := options.selection.entry_ranges(ledger_id)) != _WHOLE
    )
    packed = zlib.compress(json.dumps(group, separators=(",", ":")).encode())
    return OffloadPartition(kind, packed, tuple(offloads), ranges, entry_bounds, publish_time_bounds)


def located_offload(driver: StorageDriver, partition: OffloadPartition, number: int, locator: str | None) -> Any:
    """The partition's offload ``number``, found again through ``driver``
    by its ``locator`` (or carried whole when that is ``None``), described
    as planning saw it. Raises what the kind raises: an offload deleted
    since planning, :class:`~offload_core.errors.NotFoundError`."""
    kind = partition.kind
    offload = partition.offloads[number] if locator is None else kind.locate(driver, locator)
    if not offload.ledger_ids:
        offload = kind.describe(driver, offload)  # as planning saw it: entries' contract
    return offload


def ledger_entries(
    driver: StorageDriver, partition: OffloadPartition, offload: Any, ledger_id: int
) -> Iterator[tuple[int, bytes]]:
    """Entry id and payload of the wanted entries of ``ledger_id`` of
    ``offload`` (see :func:`located_offload`), in entry order. Raises what
    the kind raises."""
    ranges = partition.entry_ranges(ledger_id)
    for entry_id, payload in partition.kind.entries(driver, offload, ledger_id):
        if partition.wants(entry_id, ranges):
            yield entry_id, payload
