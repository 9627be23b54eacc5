"""Small whole-ledger (PIP-17) offloads packed into one ``pulsar-offload``
partition, as Spark packs small files: up to ``bytesPerPartition`` of data
objects, each counted with an open cost (Spark's
``spark.sql.files.openCostInBytes``, 4 MiB), so a partition of tiny
ledgers holds a bounded number of them.

Planning on the Spark driver then needs only the listing: a packed
partition names its ledgers' data objects (their keys packed into one
bytes object: a key's prefix and 25 bytes a ledger), and the task reads each
ledger's index itself and then its wanted blocks, as the driver would
have cut them (:func:`~offload_core.spark.block_ranges.ledger_partitions`).
A store of 100,000 small ledgers is planned without 100,000 index reads on
the driver, into about 3,200 tasks rather than 100,000. Sizes are the
listing's, as stored: a ledger stored compressed is packed by its
compressed size, so a packed task may read more than ``bytesPerPartition``
once decompressed."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from ..errors import FormatError
from ..formats import pulsar_v1 as v1
from ..offload.ledgers.inventory import LedgerCopy, index_key_of
from ..storage import StorageDriver
from .block_ranges import BlockRangePartition, EntryRanges, ledger_partitions
from .column_bounds import ANY_VALUE, ColumnBounds
from .key_packing import pack_key, unpack_key
from .packing import packed
from .read_options import OPEN_COST_BYTES

__all__ = [
    "LedgerGroupPartition",
    "PackedKeys",
    "ledger_index_partitions",
    "packed_groups",
]

WHOLE: EntryRanges = ((0, None),)


@dataclass(frozen=True)
class PackedKeys:
    """A sequence of object keys held as one ``blob`` and each key's end in
    it (little-endian uint32s), each key packed
    (:func:`~offload_core.spark.key_packing.pack_key`: a segment's or a v1
    ledger's key as its prefix, its uuid's 16 bytes and its ledger id's 8).
    About 25 bytes a key, pickled or not, where a tuple of strings costs
    several times that."""

    blob: bytes
    ends: bytes

    @classmethod
    def of(cls, keys: Iterable[str]) -> PackedKeys:
        encoded = [pack_key(key) for key in keys]
        ends, at = [], 0
        for key in encoded:
            at += len(key)
            ends.append(at)
        return cls(b"".join(encoded), struct.pack(f"<{len(ends)}I", *ends))

    def __len__(self) -> int:
        return len(self.ends) // 4

    def __iter__(self) -> Iterator[str]:
        start = 0
        for (end,) in struct.iter_unpack("<I", self.ends):
            yield unpack_key(self.blob[start:end])
            start = end


@dataclass(frozen=True)
class LedgerGroupPartition(InputPartition):
    """Whole-ledger offloads read in one task, by their data objects' keys
    (in the listing's order), with the entry ranges to keep of each (``()``: all
    of every one) and the pushed-down bounds."""

    data_keys: PackedKeys
    entry_ranges: tuple[EntryRanges, ...] = ()
    entry_bounds: ColumnBounds = ANY_VALUE
    publish_time_bounds: ColumnBounds = ANY_VALUE

    def ledgers(self) -> Iterator[tuple[str, int, EntryRanges]]:
        """Each ledger's data key, id and entry ranges to keep."""
        ranges: Iterable[EntryRanges] = self.entry_ranges or (WHOLE for _ in range(len(self.data_keys)))
        for data_key, wanted in zip(self.data_keys, ranges, strict=True):
            parsed = v1.parse_key(data_key)
            assert parsed is not None, data_key  # planned from keys that parsed
            yield data_key, parsed.ledger_id, wanted


def packed_groups(
    ledgers: Iterable[tuple[LedgerCopy, EntryRanges]],
    bytes_per_partition: int,
    *,
    entry_bounds: ColumnBounds = ANY_VALUE,
    publish_time_bounds: ColumnBounds = ANY_VALUE,
) -> Iterator[LedgerGroupPartition]:
    """``ledgers`` (whole-ledger copies, each with the entries to read of
    it) packed in the order they come into partitions of up to
    ``bytes_per_partition``, each ledger counted as its data object's size
    plus :data:`~.read_options.OPEN_COST_BYTES` (one ledger a partition at
    least)."""
    for group in packed(ledgers, (bytes_per_partition,), lambda ledger: (ledger[0].size + OPEN_COST_BYTES,)):
        yield _partition(group, entry_bounds, publish_time_bounds)


def _partition(
    group: list[tuple[LedgerCopy, EntryRanges]], entry_bounds: ColumnBounds, publish_time_bounds: ColumnBounds
) -> LedgerGroupPartition:
    ranges = tuple(wanted for _, wanted in group)
    return LedgerGroupPartition(
        PackedKeys.of(copy.data_key for copy, _ in group),
        () if all(wanted == WHOLE for wanted in ranges) else ranges,
        entry_bounds,
        publish_time_bounds,
    )


def ledger_index_partitions(
    driver: StorageDriver, group: LedgerGroupPartition, data_key: str, ledger_id: int, wanted: EntryRanges
) -> list[BlockRangePartition]:
    """In the task: one ledger of ``group`` as the block-range partition of
    its ``wanted`` blocks (none when no block is), its index read through
    ``driver``. Raises what the read raises
    (:class:`~offload_core.errors.NotFoundError` for an index deleted since
    planning) and :class:`FormatError` for a damaged index, naming it."""
    index_key = index_key_of(data_key)
    try:
        index = v1.decode_index(driver.read(index_key))
    except FormatError as exc:
        raise FormatError(f"{index_key}: {exc}") from None
    return ledger_partitions(ledger_id, data_key, index, wanted, entry_bounds=group.entry_bounds,
                             publish_time_bounds=group.publish_time_bounds)  # fmt: skip
