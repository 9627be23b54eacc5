"""Planning the ``pulsar-offload`` read of whole-ledger (PIP-17) objects
from the store's first listing, as it comes: each complete copy found is
packed at once into a partition of small ledgers (their tasks read the
indexes, see :mod:`.ledger_groups`), so what planning holds a ledger is
its packed key and its id (8 bytes, to find a ledger offloaded twice and
to tell the other formats which ledgers are read); a ledger larger than
``bytesPerPartition`` (or every one, with ``blocksPerPartition``) is kept
and cut into block ranges from its index once the listing is done."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter

import pyarrow as pa
import pyarrow.compute as pc

from ..formats import pulsar_v1 as v1
from ..model import ObjectInfo
from ..offload.ledgers.inventory import LedgerCopy, complete_ledgers_of, stream_complete_ledgers
from ..storage import StorageDriver
from .block_ranges import BlockRangePartition, EntryRanges, ledger_partitions
from .column_bounds import ANY_VALUE, ColumnBounds
from .ledger_copies import refuse_second_copies, wanted_copies
from .ledger_groups import LedgerGroupPartition, packed_groups
from .planning_reads import open_planning_driver, read_objects
from .read_options import ReadOptions

__all__ = ["LedgerIds", "plan_whole_ledgers"]


@dataclass
class LedgerIds:
    """Ledger ids as int64s: 8 bytes each, sorted on :meth:`freeze`, then
    tested with ``in`` by bisection."""

    ids: array[int] = field(default_factory=lambda: array("q"))
    frozen: bool = False

    def add(self, ledger_id: int) -> None:
        self.ids.append(ledger_id)
        self.frozen = False

    def freeze(self) -> LedgerIds:
        if not self.frozen:
            # Sorted by Arrow over the ids' own buffer: no Python int a ledger.
            ids = pa.Array.from_buffers(pa.int64(), len(self.ids), [None, pa.py_buffer(self.ids)])
            unique = pc.unique(ids)
            ordered = pc.take(unique, pc.sort_indices(unique))
            self.ids = array("q")
            self.ids.frombytes(
                memoryview(ordered.buffers()[1])[ordered.offset * 8 : (ordered.offset + len(ordered)) * 8]
            )
            self.frozen = True
        return self

    def __contains__(self, ledger_id: object) -> bool:
        self.freeze()
        at = bisect_left(self.ids, ledger_id)  # type: ignore[call-overload]
        return bool(at < len(self.ids) and self.ids[at] == ledger_id)

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids)


def plan_whole_ledgers(
    options: ReadOptions,
    listing: Iterable[tuple[ObjectInfo, v1.LedgerKey | None]],
    read: LedgerIds,
    *,
    ledger_bounds: ColumnBounds = ANY_VALUE,
    entry_bounds: ColumnBounds = ANY_VALUE,
    publish_time_bounds: ColumnBounds = ANY_VALUE,
) -> Iterator[BlockRangePartition | LedgerGroupPartition]:
    """The partitions of the wanted complete whole-ledger copies in
    ``listing`` (the store's, sorted by key, taken as it comes, each record
    with its key's :func:`~offload_core.formats.pulsar_v1.parse_key`): packed
    groups of small ones in listing order, then the large ones' block
    ranges in ledger order. Each planned ledger's id is added to ``read``.

    Raises :class:`ConfigError` (before any index is read) when a wanted
    ledger has several complete copies and ``ledgerUuids`` chose none, and
    :class:`NotFoundError` when a large one's index was deleted since it
    was listed (with ``failOnDataLoss=false`` it is left out, logged)."""
    large: list[LedgerCopy] = []

    def small() -> Iterator[tuple[LedgerCopy, EntryRanges]]:
        for ledger in wanted_copies(complete_ledgers_of(listing), options):
            if not ledger_bounds.admits(ledger.ledger_id):
                continue
            if options.blocks_per_partition is not None or ledger.size > options.bytes_per_partition:
                large.append(ledger)
            else:
                read.add(ledger.ledger_id)
                yield ledger, options.selection.entry_ranges(ledger.ledger_id)

    yield from packed_groups(small(), options.bytes_per_partition, entry_bounds=entry_bounds,
                             publish_time_bounds=publish_time_bounds)  # fmt: skip
    planned = array("q", read.ids)
    planned.extend(ledger.ledger_id for ledger in large)
    refuse_second_copies(planned, options, lambda ledger_id: [copy.uuid for copy in _copies_of(options, ledger_id)])
    large.sort(key=attrgetter("ledger_id"))
    indexes = read_objects(options, (ledger.index_key for ledger in large), v1.decode_index)
    for ledger, index in zip(large, indexes, strict=True):
        if index is None:
            continue  # not added to ``read``: a segment holding the ledger is read instead
        read.add(ledger.ledger_id)
        yield from ledger_partitions(ledger.ledger_id, ledger.data_key, index,
                                     options.selection.entry_ranges(ledger.ledger_id), entry_bounds=entry_bounds,
                                     publish_time_bounds=publish_time_bounds,
                                     blocks_per_partition=options.blocks_per_partition,
                                     bytes_per_partition=options.bytes_per_partition)  # fmt: skip


def _copies_of(options: ReadOptions, ledger_id: int) -> list[LedgerCopy]:
    """Every complete copy of ``ledger_id``, from a listing of its own (only
    to name them in an error)."""
    driver: StorageDriver = open_planning_driver(options.url, options.driver_options)
    try:
        return [copy for copy in stream_complete_ledgers(driver.list("")) if copy.ledger_id == ledger_id]
    finally:
        driver.close()
