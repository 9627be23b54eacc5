"""The ``pulsar-offload`` source's partitions over offloads of the kinds
other offloaders register (:class:`~offload_core.offload.stored.kinds.ReadableKind`,
a Hadoop MapFile ledger say): one per ledger of each offload, read in its
task through the kind that found it, which travels with the partition."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import InputPartition

from ..offload.stored.kinds import ReadableKind, StoredOffload
from ..storage import StorageDriver
from .column_bounds import ANY_VALUE, ColumnBounds
from .read_options import ReadOptions
from .store_tasks import Store

__all__ = ["BLOCK_RANGE_KINDS", "OffloadPartition", "plan_kind_partitions", "read_kind_partition"]

# Kinds the source reads in block-range partitions of its own (Arrow straight from the blocks).
BLOCK_RANGE_KINDS = frozenset({"pulsar-ledger", "pulsar-segment"})


@dataclass(frozen=True)
class OffloadPartition(InputPartition):
    """One ledger of one offload, and the entry ranges to keep (the store
    is the reader's: see :func:`read_kind_partition`)."""

    kind: Any  # a ReadableKind
    offload: StoredOffload
    ledger_id: int
    entry_ranges: tuple[tuple[int, int | None], ...] = ((0, None),)
    entry_bounds: ColumnBounds = ANY_VALUE
    publish_time_bounds: ColumnBounds = ANY_VALUE  # microseconds since the epoch

    def wants(self, entry_id: int) -> bool:
        in_range = any(first <= entry_id and (last is None or entry_id <= last) for first, last in self.entry_ranges)
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
    """A partition per wanted ledger of every complete offload of the
    readable ``kinds`` (those without block-range partitions of their own)
    that ``store`` lists, but ``skip_ledgers`` (read from Pulsar's objects
    already); with ``ledgerUuids``, of a ledger only the offload of the
    uuid it names (a copy an abandoned offload left is not read twice)."""
    readable = [kind for kind in kinds if kind.name not in BLOCK_RANGE_KINDS and isinstance(kind, ReadableKind)]
    partitions = []
    for kind in readable:
        for found in kind.find(store, ""):
            if not found.complete:
                continue
            # A kind whose keys name the ledgers (a MapFile directory's) needs no read here: its
            # age, all describe adds, is no part of a read.
            offload = found if found.ledger_ids else kind.describe(store, found)
            partitions += [
                OffloadPartition(kind, offload, ledger_id, options.selection.entry_ranges(ledger_id), entry_bounds,
                                 publish_time_bounds)
                for ledger_id in offload.ledger_ids
                if ledger_id not in skip_ledgers and options.selection.wants_ledger(ledger_id)
                and ledger_bounds.admits(ledger_id)
                and (options.ledger_uuids is None or (ledger_id, offload.uuid) in options.ledger_uuids)
            ]  # fmt: skip
    return partitions


def read_kind_partition(store: Store, partition: OffloadPartition) -> Iterator[tuple[int, bytes]]:
    """The wanted entries of the partition's ledger in ``store`` (runs in
    the task: opens its own driver)."""
    driver = store.open()
    try:
        for entry_id, payload in partition.kind.entries(driver, partition.offload, partition.ledger_id):
            if partition.wants(entry_id):
                yield entry_id, payload
    finally:
        driver.close()
