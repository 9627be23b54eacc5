"""What a ``pulsar-offload`` task reads of its partition: rows, or Arrow
batches of undecoded entries, through one storage driver the task opens
for the whole partition (a packed one's ledgers, runs and offloads read
one after another through it), each block's header checked against what
its index named. An object deleted since planning: see
:mod:`offload_core.spark.vanished_objects`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from ..errors import FormatError, NotFoundError
from ..formats import pulsar_v1 as v1
from ..formats import pulsar_v2 as v2
from ..storage import StorageDriver
from .arrow_blocks import entry_batches
from .block_ranges import BlockRangePartition
from .column_bounds import ANY_VALUE, ColumnBounds
from .kind_partitions import OffloadPartition
from .ledger_groups import LedgerGroupPartition
from .message_rows import MessageRow, entry_rows
from .packed_runs import PackedRunsPartition
from .read_options import Decode
from .store_tasks import Store
from .vanished_objects import kind_entries, ledger_group_partitions, vanished

__all__ = ["Partition", "read_partition", "read_partition_batches"]

Partition = BlockRangePartition | LedgerGroupPartition | PackedRunsPartition | OffloadPartition
BlockPartition = BlockRangePartition | LedgerGroupPartition | PackedRunsPartition

T = TypeVar("T")


def read_partition(
    store: Store, partition: Partition, decode: Decode, fail_on_data_loss: bool = True
) -> Iterator[MessageRow]:
    """The rows of one partition of ``store`` (runs in the task: opens its
    own driver). An object of the partition deleted since the read was
    planned raises :class:`NotFoundError` naming it, its ledger and the
    partition's entries; with ``fail_on_data_loss`` false, the rows given
    before stay, the rest of that object's are skipped (a packed
    partition's other objects are still read), and one record on
    :data:`~offload_core.spark.data_loss.LOGGER` says which entries."""
    driver = store.open()
    try:
        yield from _rows(store, driver, partition, decode, fail_on_data_loss)
    finally:
        driver.close()


def read_partition_batches(
    store: Store, partition: BlockPartition, schema: Any, max_rows: int, fail_on_data_loss: bool = True
) -> Iterator[Any]:
    """Undecoded entries of one partition of ``store`` as Arrow record
    batches of ``schema`` (see :func:`arrow_blocks.entry_batches`); runs in
    the task. An object deleted since planning, as :func:`read_partition`."""
    driver = store.open()
    try:
        for part in _block_partitions(store, driver, partition, fail_on_data_loss):
            yield from _part_batches(store, driver, part, schema, max_rows, fail_on_data_loss)
    finally:
        driver.close()


def _part_batches(
    store: Store, driver: StorageDriver, part: BlockRangePartition, schema: Any, max_rows: int, fail_on_data_loss: bool
) -> Iterator[Any]:
    def batches(data: bytes, first_entry_id: int, entry_lengths: bytes | None) -> Iterator[Any]:
        return entry_batches(part.ledger_id, data, first_entry_id, wanted=part.entry_ranges, bounds=part.entry_bounds,
                             schema=schema, max_rows=max_rows, entry_lengths=entry_lengths)  # fmt: skip

    return _blocks(store, driver, part, batches, fail_on_data_loss)


def _rows(
    store: Store, driver: StorageDriver, partition: Partition, decode: Decode, fail_on_data_loss: bool
) -> Iterator[MessageRow]:
    times = partition.publish_time_bounds
    if isinstance(partition, OffloadPartition):
        entries: Iterable[tuple[int, int, bytes]] = kind_entries(store, driver, partition, fail_on_data_loss)
    else:
        entries = (
            entry
            for part in _block_partitions(store, driver, partition, fail_on_data_loss)
            for entry in _wanted_block_entries(store, driver, part, fail_on_data_loss)
        )
    for ledger_id, entry_id, payload in entries:
        rows = entry_rows(ledger_id, entry_id, payload, decode)
        yield from rows if times == ANY_VALUE else _published_within(rows, times)


def _block_partitions(
    store: Store, driver: StorageDriver, partition: BlockPartition, fail_on_data_loss: bool
) -> Iterator[BlockRangePartition]:
    """The block-range partitions ``partition`` is or packs; of a group of
    ledgers, their indexes read as the ledgers come (a ledger whose index
    vanished: see :func:`.vanished_objects.ledger_group_partitions`)."""
    if isinstance(partition, BlockRangePartition):
        yield partition
    elif isinstance(partition, PackedRunsPartition):
        yield from partition.runs()
    else:
        yield from ledger_group_partitions(store, driver, partition, fail_on_data_loss)


def _wanted_block_entries(
    store: Store, driver: StorageDriver, partition: BlockRangePartition, fail_on_data_loss: bool
) -> Iterator[tuple[int, int, bytes]]:
    """Ledger id, entry id and payload of the wanted entries of one block-range partition."""
    blocks = _blocks(store, driver, partition, lambda data, first, _: _block_entries(partition, data, first),
                     fail_on_data_loss)  # fmt: skip
    for entry_id, payload in blocks:
        if partition.wants(entry_id):
            yield partition.ledger_id, entry_id, payload


def _blocks(
    store: Store,
    driver: StorageDriver,
    partition: BlockRangePartition,
    decode: Callable[[bytes, int, bytes | None], Iterable[T]],
    fail_on_data_loss: bool,
) -> Iterator[T]:
    """What ``decode(block bytes, first entry id, entry lengths)`` makes of
    each block of one partition of ``store``, read through ``driver``, in
    order, each block's header first checked against what the index
    named. :class:`FormatError` names the object and the block's offset.
    An object deleted since planning: see
    :func:`~offload_core.spark.vanished_objects.vanished`."""
    lengths = partition.entry_lengths or (None,) * len(partition.blocks)
    for (offset, end, first_entry_id), entry_lengths in zip(partition.blocks, lengths, strict=True):
        try:
            data = driver.read(partition.data_key, offset, end)
        except NotFoundError as exc:
            # The blocks before were yielded whole: what is lost starts at this block.
            first, last = partition.covered()
            vanished(store, partition.data_key, partition.ledger_id, (first, last),
                     max(first, first_entry_id), last, exc, fail_on_data_loss)  # fmt: skip
            return
        try:
            skip = _check_block_header(partition, data, first_entry_id) - v1.BLOCK_HEADER_LENGTH
            # The decoders frame entries after a 128-byte header; a longer
            # streaming header's rest is skipped, as Pulsar's reader does.
            yield from decode(data[skip:] if skip else data, first_entry_id, entry_lengths)
        except FormatError as exc:
            raise FormatError(f"{partition.data_key} at byte {offset}: {exc}") from None


def _check_block_header(partition: BlockRangePartition, data: bytes, first_entry_id: int) -> int:
    """Check a block's header against what the index named (the framing
    is checked as its entries are read); its length. Raises
    :class:`FormatError` when they disagree."""
    view = memoryview(data)
    header_length = v1.BLOCK_HEADER_LENGTH
    if partition.streaming:
        segment_header = v2.decode_block_header(view)
        found = (segment_header.ledger_id, segment_header.first_entry_id, segment_header.block_length)
        header_length = segment_header.header_length
    else:
        header = v1.decode_block_header(view)
        found = (partition.ledger_id, header.first_entry_id, header.block_length)
    expected = (partition.ledger_id, first_entry_id, len(data))
    if found != expected:
        raise FormatError(
            f"block header says ledger {found[0]} from entry {found[1]}, {found[2]} bytes; the index says ledger "
            f"{expected[0]} from entry {expected[1]}, {expected[2]} bytes"
        )
    return header_length


def _block_entries(partition: BlockRangePartition, data: bytes, first_entry_id: int) -> tuple[tuple[int, bytes], ...]:
    """The entries of one block whose header was checked; a segment block
    always holds one at least."""
    entries, _ = v1.decode_block_body(memoryview(data), first_entry_id)
    if partition.streaming and not entries:
        raise FormatError(f"segment block of ledger {partition.ledger_id} holds no entry")
    return entries


def _published_within(rows: Iterator[MessageRow], times: ColumnBounds) -> Iterator[MessageRow]:
    """The rows whose publish time the pushed bounds admit (a row without
    one fails any comparison Spark would make on it)."""
    for row in rows:
        if row[4] is not None and times.admits(row[4] * 1000):
            yield row
