"""``spark.read.format("pulsar-offload")``: offloaded ledgers as a DataFrame,
straight from object storage, with no broker.

Planning happens in a Python worker on the Spark driver's machine: the
store is listed once (below the read transforms: no request per object
listed), every complete offloaded ledger's index (PIP-17) and every
complete segment's index (PIP-76) is read, a few at a time as planning
takes them, and nothing else (bench/README.md, planning), and the blocks holding
wanted entries are grouped into partitions (``bytesPerPartition``, default
128 MiB; a partition holds blocks of one ledger in one object). A partition is
small and picklable (key, byte ranges, entry ranges); the store's URL and
driver options travel once, with the reader, not with every partition.
A store mixing both formats is read with each entry once (see
:mod:`offload_core.spark.segment_planning`).
Each task opens its own storage driver in ``read()`` and decodes its blocks
strictly. The offloads of kinds other offloaders register (a Hadoop
MapFile ledger, say) are read through their kind, a partition per ledger
(see :mod:`offload_core.spark.kind_partitions`).

Options:

- ``path``: the store URL (required; ``.load(URL)`` sets it);
- ``ledgers``: comma-separated ledger ids to read whole;
- ``entries``: entry ranges, ``LEDGER:FIRST-LAST``, ``LEDGER:FIRST-`` or
  ``LEDGER:ENTRY``, comma-separated (with neither option, everything);
- ``ledgerUuids``: ``LEDGER:UUID`` pairs, comma-separated: only these
  whole-ledger offloads (v1 objects, and those of the other kinds, Hadoop
  MapFiles say) are read, so a copy an abandoned offload left is not read
  twice; every other ledger comes from segments (what a managed ledger's
  metadata names: the export passes it). Without it, a ledger the store
  holds two complete v1 copies of fails the read (:class:`ConfigError`
  naming both uuids), never read twice;
- ``decode``: ``auto`` (default: entries that are Pulsar messages are
  decoded, batches exploded into a row per message; other entries are one
  row with null message columns), ``pulsar`` (an entry that is not a
  message fails the read) or ``none`` (one row per entry, undecoded);
- ``arrow``: ``true`` (default) yields Arrow record batches of up to
  ``maxRecordsPerBatch`` rows (default 10000), ``false`` yields tuples;
- ``bytesPerPartition`` (default 128 MiB, Spark's own
  ``maxPartitionBytes``): consecutive blocks of one object per task up to
  that many bytes; or ``blocksPerPartition``, a fixed number of blocks;
- ``failOnDataLoss``: ``true`` (default) fails a task whose object (a
  ledger's or segment's data object, or another kind's) was deleted after
  the read was planned, with :class:`NotFoundError` naming it, its ledger
  and entries; ``false`` keeps the rows the partition gave before and
  skips the rest, one WARNING record per skipped partition on
  :data:`offload_core.spark.data_loss.LOGGER` (counted by
  :func:`~offload_core.spark.skipped_objects` in a batch read), as
  ``kafka-remote`` does;
- ``driver.<name>`` for storage-driver options (``driver.region``,
  ``driver.endpoint`` ...).

A schema given with ``.schema(...)`` may name a subset of the columns, in
any order: only those are built (column pruning; the Python data source
API passes no projection of its own).

With ``filterPushdown=true`` (which needs the session setting
``spark.sql.python.filterPushdown.enabled=true``), comparisons and ``IN``
on ``ledger_id`` and ``entry_id`` in a query prune the ledgers and blocks
read, and on ``publish_time`` drop decoded messages in the task; Spark
still applies every filter to the rows.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..errors import ConfigError, FormatError, NotFoundError
from ..formats import pulsar_v1 as v1
from ..formats import pulsar_v2 as v2
from ..offload.ledgers.inventory import find_complete_ledgers
from ..offload.reading.block_tables import index_entry_offsets
from ..plugins import PluginManager
from .arrow_blocks import entry_batches
from .column_bounds import ANY_VALUE, ColumnBounds
from .kind_partitions import OffloadPartition, plan_kind_partitions
from .ledger_copies import ledger_copies_to_read
from .message_rows import COLUMNS, MessageRow, arrow_batch, entry_rows, spark_tuple
from .planning_reads import ListedOnce, open_planning_driver, read_objects
from .pushdown import COLUMN_VALUES, narrowed
from .read_options import Decode, ReadOptions, parse_read_options
from .segment_planning import plan_segment_blocks
from .source import SCHEMA
from .store_tasks import Store, installed_kinds
from .vanished_objects import clipped, kind_entries, vanished

__all__ = ["SCHEMA", "BlockRangePartition", "make_reader", "plan_partitions"]

T = TypeVar("T")


@dataclass(frozen=True)
class BlockRangePartition(InputPartition):
    """Consecutive blocks of one ledger's data object, and the entry ranges
    to keep from them (``last`` ``None`` for open-ended)."""

    ledger_id: int
    data_key: str
    blocks: tuple[tuple[int, int, int], ...]  # (offset, end, first entry id)
    entry_ranges: tuple[tuple[int, int | None], ...] = ((0, None),)
    entry_bounds: ColumnBounds = ANY_VALUE
    streaming: bool = False  # blocks of a PIP-76 segment (one ledger's run in it)
    publish_time_bounds: ColumnBounds = ANY_VALUE  # microseconds since the epoch
    # Per block, its entries' payload lengths (big-endian uint32s) from the
    # index's entry-offsets section, when it has one: a task then finds the
    # entries without walking their headers (it still checks every one).
    entry_lengths: tuple[bytes | None, ...] = ()
    last_entry: int | None = None  # the last block's last entry, when planning knew it

    def covered(self) -> tuple[int, int | None]:
        """The first and last (``None``: open-ended) entry this partition reads."""
        return clipped(self.blocks[0][2], self.last_entry, self.entry_ranges)

    def wants(self, entry_id: int) -> bool:
        in_range = any(first <= entry_id and (last is None or entry_id <= last) for first, last in self.entry_ranges)
        return in_range and self.entry_bounds.admits(entry_id)


def plan_partitions(
    options: Mapping[str, str] | ReadOptions,
    *,
    ledger_bounds: ColumnBounds = ANY_VALUE,
    entry_bounds: ColumnBounds = ANY_VALUE,
    publish_time_bounds: ColumnBounds = ANY_VALUE,
    plugin_manager: PluginManager | None = None,
) -> list[BlockRangePartition | OffloadPartition]:
    """The partitions for reading the store named by ``options["path"]``,
    pruned to the ledgers and blocks the bounds (from pushed-down filters)
    admit: block ranges of Pulsar's objects, then a partition per ledger of
    the offloads of the other readable kinds ``plugin_manager``'s
    offloaders (default: the process's) register.

    Raises :class:`ConfigError` for a missing path or a bad option."""
    parsed = options if isinstance(options, ReadOptions) else parse_read_options(options)
    store = ListedOnce(open_planning_driver(parsed.url, parsed.driver_options))  # one listing for every kind
    try:
        copies = ledger_copies_to_read(find_complete_ledgers(store.list("")), parsed)
        targets = [ledger for ledger in copies if ledger_bounds.admits(ledger.ledger_id)]
        partitions: list[BlockRangePartition | OffloadPartition] = []
        for ledger, index in zip(
            targets, read_objects(parsed, (ledger.index_key for ledger in targets), v1.decode_index), strict=True
        ):
            ranges = parsed.selection.entry_ranges(ledger.ledger_id)
            lengths = _block_lengths(index)
            lasts = {entry.first_entry_id: last for entry, last in zip(index.entries, _block_lasts(index), strict=True)}
            blocks = [
                (entry.offset, index.block_end(entry), entry.first_entry_id)
                for entry, last in zip(index.entries, _block_lasts(index), strict=True)
                if _overlaps(entry.first_entry_id, last, ranges) and entry_bounds.overlaps(entry.first_entry_id, last)
            ]
            for group in grouped_blocks(blocks, parsed):
                group_lengths = tuple(lengths.get(first) for _, _, first in group)
                partitions.append(BlockRangePartition(ledger.ledger_id, ledger.data_key, group, ranges, entry_bounds,
                                                      publish_time_bounds=publish_time_bounds,
                                                      entry_lengths=group_lengths,
                                                      last_entry=lasts[group[-1][2]]))  # fmt: skip
        read = {ledger.ledger_id for ledger in targets}
        for run in plan_segment_blocks(parsed, store, skip_ledgers=read, ledger_bounds=ledger_bounds,
                                       entry_bounds=entry_bounds):  # fmt: skip
            groups = list(grouped_blocks(run.blocks, parsed))
            # A group's last entry is the next's first but one; the run's last group ends where its ranges do.
            nexts: list[int | None] = [following[0][2] - 1 for following in groups[1:]] + [None]
            for group, last in zip(groups, nexts, strict=True):
                partitions.append(BlockRangePartition(run.ledger_id, run.data_key, group, run.entry_ranges,
                                                      entry_bounds, streaming=True,
                                                      publish_time_bounds=publish_time_bounds,
                                                      last_entry=last))  # fmt: skip
        read |= {p.ledger_id for p in partitions}
        kinds = installed_kinds(plugin_manager)
        partitions += plan_kind_partitions(parsed, kinds, store, skip_ledgers=read, ledger_bounds=ledger_bounds,
                                           entry_bounds=entry_bounds,
                                           publish_time_bounds=publish_time_bounds)  # fmt: skip
        return partitions
    finally:
        store.close()


def grouped_blocks(
    blocks: Sequence[tuple[int, int, int]], options: ReadOptions
) -> Iterator[tuple[tuple[int, int, int], ...]]:
    """Consecutive ``(offset, end, first entry)`` blocks, grouped into the
    partitions' runs: ``blocksPerPartition`` blocks each when that option is
    given, else as many as fit ``bytesPerPartition`` (one at least)."""
    if options.blocks_per_partition is not None:
        step = options.blocks_per_partition
        yield from (tuple(blocks[first : first + step]) for first in range(0, len(blocks), step))
        return
    group: list[tuple[int, int, int]] = []
    size = 0
    for block in blocks:
        span = block[1] - block[0]
        if group and size + span > options.bytes_per_partition:
            yield tuple(group)
            group, size = [], 0
        group.append(block)
        size += span
    if group:
        yield tuple(group)


def _block_lengths(index: v1.Index) -> dict[int, bytes]:
    """Each block's entry lengths (big-endian uint32s) by its first entry
    id, from the index's entry-offsets section; none when it has no sound
    one (the tasks walk the entry headers then, as for Pulsar's objects)."""
    try:
        offsets = index_entry_offsets(index)
    except FormatError:
        return {}
    if offsets is None:
        return {}
    every = array("I", offsets.lengths)
    if sys.byteorder == "little":
        every.byteswap()
    big_endian = every.tobytes()
    starts = offsets.starts
    return {
        entry.first_entry_id: big_endian[4 * starts[number] : 4 * starts[number + 1]]
        for number, entry in enumerate(index.entries)
    }


def _block_lasts(index: v1.Index) -> list[int]:
    """Each block's last entry id: the next block's first minus one, and the
    ledger's last entry for the final block."""
    return [entry.first_entry_id - 1 for entry in index.entries[1:]] + [index.last_entry_id]


def _overlaps(first: int, last: int, ranges: tuple[tuple[int, int | None], ...]) -> bool:
    return any(start <= last and (end is None or first <= end) for start, end in ranges)


def _partition_blocks(
    store: Store,
    partition: BlockRangePartition,
    decode: Callable[[bytes, int, bytes | None], Iterable[T]],
    fail_on_data_loss: bool,
) -> Iterator[T]:
    """What ``decode(block bytes, first entry id, entry lengths)`` makes of
    each block of one partition of ``store``, in order, each block's
    header first checked against what the index named; runs in the task,
    which opens its own driver. :class:`FormatError` names the object and
    the block's offset. An object deleted since planning: see
    :func:`~offload_core.spark.vanished_objects.vanished`."""
    driver = store.open()
    lengths = partition.entry_lengths or (None,) * len(partition.blocks)
    try:
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
    finally:
        driver.close()


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


def read_partition(
    store: Store, partition: BlockRangePartition | OffloadPartition, decode: Decode, fail_on_data_loss: bool = True
) -> Iterator[MessageRow]:
    """The rows of one partition of ``store`` (runs in the task: opens its
    own driver). An object of the partition deleted since the read was
    planned raises :class:`NotFoundError` naming it, its ledger and the
    partition's entries; with ``fail_on_data_loss`` false, the rows given
    before stay, the rest are skipped, and one record on
    :data:`~offload_core.spark.data_loss.LOGGER` says which entries."""
    times = partition.publish_time_bounds
    if isinstance(partition, OffloadPartition):
        entries: Iterable[tuple[int, bytes]] = kind_entries(store, partition, fail_on_data_loss)
    else:
        entries = _partition_blocks(store, partition, lambda data, first, _: _block_entries(partition, data, first),
                                    fail_on_data_loss)  # fmt: skip
    for entry_id, payload in entries:
        if partition.wants(entry_id):
            rows = entry_rows(partition.ledger_id, entry_id, payload, decode)
            yield from rows if times == ANY_VALUE else _published_within(rows, times)


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


def read_partition_batches(
    store: Store, partition: BlockRangePartition, schema: Any, max_rows: int, fail_on_data_loss: bool = True
) -> Iterator[Any]:
    """Undecoded entries of one partition of ``store`` as Arrow record
    batches of ``schema`` (see :func:`arrow_blocks.entry_batches`); runs in
    the task. An object deleted since planning, as :func:`read_partition`."""

    def batches(data: bytes, first_entry_id: int, entry_lengths: bytes | None) -> Iterator[Any]:
        return entry_batches(partition.ledger_id, data, first_entry_id, wanted=partition.entry_ranges,
                             bounds=partition.entry_bounds, schema=schema, max_rows=max_rows,
                             entry_lengths=entry_lengths)  # fmt: skip

    return _partition_blocks(store, partition, batches, fail_on_data_loss)


class PulsarOffloadReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: StructType = SCHEMA) -> None:
        self.options = parse_read_options(options)
        self.store = Store(self.options.url, self.options.driver_options)  # every partition's, held once
        self.schema = checked_schema(schema)
        self.bounds = {"ledger_id": ANY_VALUE, "entry_id": ANY_VALUE, "publish_time": ANY_VALUE}

    def partitions(self) -> list[BlockRangePartition | OffloadPartition]:
        return plan_partitions(
            self.options,
            ledger_bounds=self.bounds["ledger_id"],
            entry_bounds=self.bounds["entry_id"],
            publish_time_bounds=self.bounds["publish_time"],
        )

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, (BlockRangePartition, OffloadPartition)):
            return  # nothing was planned: Spark still runs one task, with its own placeholder partition
        schema = to_arrow_schema(self.schema, timezone="UTC")
        if self.options.arrow and self.options.decode is Decode.NONE and isinstance(partition, BlockRangePartition):
            yield from read_partition_batches(self.store, partition, schema, self.options.max_records_per_batch,
                                              self.options.fail_on_data_loss)  # fmt: skip
            return
        rows = read_partition(self.store, partition, self.options.decode, self.options.fail_on_data_loss)
        names = [field.name for field in self.schema.fields]
        if not self.options.arrow:
            picked = [COLUMNS.index(name) for name in names]
            for row in map(spark_tuple, rows):
                yield tuple(row[at] for at in picked)
            return
        pending: list[MessageRow] = []
        for row in rows:
            pending.append(row)
            if len(pending) >= self.options.max_records_per_batch:
                yield arrow_batch(pending, schema)
                pending = []
        if pending:
            yield arrow_batch(pending, schema)


class FilterPushdownReader(PulsarOffloadReader):
    """The reader with ``filterPushdown=true``. Spark refuses a reader that
    implements ``pushFilters`` unless the session enables Python filter
    pushdown, so pushing is opt-in."""

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:
        """Narrow what is read by filters on ``ledger_id``, ``entry_id`` and
        ``publish_time`` (see :mod:`offload_core.spark.pushdown`); every
        filter is handed back, so Spark still applies it exactly."""
        for pushed in filters:
            attribute: tuple[str, ...] = getattr(pushed, "attribute", ())
            column = attribute[0] if len(attribute) == 1 else None
            if column is not None and column in self.bounds:
                self.bounds[column] = narrowed(self.bounds[column], pushed, COLUMN_VALUES[column])
            yield pushed


def checked_schema(schema: StructType) -> StructType:
    """``schema`` if every field is one of the source's columns with its
    type (a subset, in any order: the columns a query builds, so the rest
    are never made). Raises :class:`ConfigError` naming the field."""
    known = {field.name: field for field in SCHEMA.fields}
    for field in schema.fields:
        ours = known.get(field.name)
        if ours is None:
            raise ConfigError(f"pulsar-offload has no column {field.name!r}; its columns are {', '.join(COLUMNS)}")
        if ours.dataType != field.dataType:
            raise ConfigError(
                f"pulsar-offload column {field.name!r} is {ours.dataType.simpleString()}, the schema given says "
                f"{field.dataType.simpleString()}"
            )
    return schema


def make_reader(options: Mapping[str, str], schema: StructType = SCHEMA) -> PulsarOffloadReader:
    """The reader for a ``pulsar-offload`` read with ``options``, building
    the columns of ``schema`` (the source's, or a subset a user gave)."""
    if parse_read_options(options).filter_pushdown:
        return FilterPushdownReader(options, schema)
    return PulsarOffloadReader(options, schema)
