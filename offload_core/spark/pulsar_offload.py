"""``spark.read.format("pulsar-offload")``: offloaded ledgers as a DataFrame,
straight from object storage, with no broker.

Planning happens in a Python worker on the Spark driver's machine: the
store is listed once (below the read transforms: no request per object
listed), every complete segment's index (PIP-76) is read, and a
whole-ledger object's index (PIP-17) only when the ledger is larger than
``bytesPerPartition``, a few at a time as planning takes them, and nothing
else (bench/README.md, planning). Small whole-ledger objects are packed
into partitions of up to ``bytesPerPartition`` (default 128 MiB, each
counted with Spark's 4 MiB open cost), whose tasks read their indexes
(:mod:`offload_core.spark.ledger_groups`); a larger ledger's blocks
holding wanted entries are cut into partitions of consecutive blocks of
it; a segment's runs of blocks are cut so too, and small runs packed
(:mod:`offload_core.spark.packed_runs`). A partition is small and
picklable (keys, byte ranges, entry ranges, packed); the store's URL and
driver options travel once, with the reader, not with every partition.
A store mixing both formats is read with each entry once (see
:mod:`offload_core.spark.segment_planning`).
Each task opens its own storage driver in ``read()`` and decodes its blocks
strictly. The offloads of kinds other offloaders register (a Hadoop
MapFile ledger, say) are read through their kind, small offloads packed
into one partition up to ``bytesPerPartition`` (each counted 4 MiB more, as
Spark counts a file's open cost; see :mod:`offload_core.spark.kind_partitions`).

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
  holds two complete copies of (v1 objects, or two of another kind's
  offloads, MapFile directories say) fails the read (:class:`ConfigError`
  naming both uuids), never read twice;
- ``decode``: ``auto`` (default: entries that are Pulsar messages are
  decoded, batches exploded into a row per message; other entries are one
  row with null message columns), ``pulsar`` (an entry that is not a
  message fails the read) or ``none`` (one row per entry, undecoded);
- ``arrow``: ``true`` (default) yields Arrow record batches of up to
  ``maxRecordsPerBatch`` rows (default 10000), ``false`` yields tuples;
- ``bytesPerPartition`` (default 128 MiB, Spark's own
  ``maxPartitionBytes``): small offloads packed per task up to that many
  bytes, a larger ledger's consecutive blocks cut to it; or
  ``blocksPerPartition``, a fixed number of blocks of one object per
  task, nothing packed;
- ``failOnDataLoss``: ``true`` (default) fails a task whose object (a
  ledger's data object or index, a segment's data object, or another
  kind's offload) was deleted after the read was planned, with
  :class:`NotFoundError` naming it, its ledger and entries; ``false``
  keeps the rows read before and skips the rest of that object's (a
  packed task's other objects are still read), one WARNING record per
  skipped ledger on
  :data:`offload_core.spark.data_loss.LOGGER` (counted by
  :func:`~offload_core.spark.skipped_objects`), as
  ``kafka-remote`` does; an index the planning on the driver reads (a
  segment's, a large ledger's, or, in a ``readStream`` trigger, each new
  object's) deleted between the listing and that read likewise fails the
  planning naming it, or with ``false`` is left out of the plan, logged;
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

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import DataSourceReader, Filter, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from ..errors import ConfigError
from ..plugins import PluginManager
from .block_ranges import BlockRangePartition, grouped_blocks
from .column_bounds import ANY_VALUE, ColumnBounds
from .key_lists import KeyList
from .kind_partitions import OffloadPartition, plan_kind_partitions
from .ledger_groups import LedgerGroupPartition
from .message_rows import COLUMNS, MessageRow, arrow_batch, spark_tuple
from .packed_runs import PackedRunsPartition, packed_runs
from .partition_reads import Partition, read_partition, read_partition_batches
from .planning_reads import ListedOnce, open_planning_driver
from .pushdown import COLUMN_VALUES, narrowed
from .read_options import Decode, ReadOptions, parse_read_options
from .segment_planning import SegmentBlocks, pairing_segments, plan_segment_blocks, pulsar_key
from .source import SCHEMA
from .store_tasks import Store, installed_kinds
from .whole_ledger_planning import LedgerIds, plan_whole_ledgers

__all__ = [
    "SCHEMA",
    "BlockRangePartition",
    "LedgerGroupPartition",
    "PackedRunsPartition",
    "make_reader",
    "plan_partitions",
    "read_partition",
    "read_partition_batches",
]


def plan_partitions(
    options: Mapping[str, str] | ReadOptions,
    *,
    ledger_bounds: ColumnBounds = ANY_VALUE,
    entry_bounds: ColumnBounds = ANY_VALUE,
    publish_time_bounds: ColumnBounds = ANY_VALUE,
    plugin_manager: PluginManager | None = None,
    segment_wanted: Callable[[str], bool] | None = None,
) -> list[Partition]:
    """The partitions for reading the store named by ``options["path"]``,
    pruned to the ledgers and blocks the bounds (from pushed-down filters)
    admit: Pulsar's whole-ledger objects (small ones packed, their indexes
    read by the task; a ledger larger than ``bytesPerPartition``, or any
    with ``blocksPerPartition``, cut into block ranges here), the block
    ranges of its segments (small runs packed), then the offloads of the
    other readable kinds ``plugin_manager``'s offloaders (default: the
    process's) register, small ones packed into one partition. A complete
    segment whose data key ``segment_wanted`` rejects is left out unread
    (for a caller that knows it holds no ledger the selection wants).

    Raises :class:`ConfigError` for a missing path or a bad option."""
    parsed = options if isinstance(options, ReadOptions) else parse_read_options(options)
    # One listing for every kind; Pulsar's objects are planned from it as it comes, never kept.
    store = ListedOnce(open_planning_driver(parsed.url, parsed.driver_options), taken_by_first=pulsar_key)
    try:
        read = LedgerIds()
        segment_keys = KeyList()
        listing = pairing_segments(store.first_listing(), _collecting(segment_keys, segment_wanted))
        partitions: list[Partition] = list(plan_whole_ledgers(parsed, listing, read,
                                                              ledger_bounds=ledger_bounds, entry_bounds=entry_bounds,
                                                              publish_time_bounds=publish_time_bounds))  # fmt: skip
        for _ in listing:  # the rest, if the whole-ledger planning stopped short: segments are paired in it
            pass
        runs = plan_segment_blocks(parsed, segment_keys, skip_ledgers=read.freeze(), ledger_bounds=ledger_bounds,
                                   entry_bounds=entry_bounds)  # fmt: skip
        del segment_keys  # the segments' planning lets them go once it has read their indexes, before the plan
        segment_partitions = (
            BlockRangePartition(run.ledger_id, run.data_key, group, run.entry_ranges, entry_bounds, streaming=True,
                                publish_time_bounds=publish_time_bounds, last_entry=last)
            for run in _noting_ledgers(runs, read)
            for group, last in _with_lasts(grouped_blocks(run.blocks, parsed.blocks_per_partition,
                                                          parsed.bytes_per_partition))
        )  # fmt: skip
        if parsed.blocks_per_partition is None:
            partitions += packed_runs(segment_partitions, parsed.bytes_per_partition)
        else:
            partitions += segment_partitions
        kinds = installed_kinds(plugin_manager)
        partitions += plan_kind_partitions(parsed, kinds, store, skip_ledgers=read.freeze(),
                                           ledger_bounds=ledger_bounds, entry_bounds=entry_bounds,
                                           publish_time_bounds=publish_time_bounds)  # fmt: skip
        return partitions
    finally:
        store.close()


def _collecting(keys: KeyList, wanted: Callable[[str], bool] | None) -> Callable[[str, int], None]:
    """What :func:`pairing_segments` calls with each complete segment: its
    data key added to ``keys`` if ``wanted`` (default: every one) takes it."""

    def found(data_key: str, _size: int) -> None:
        if wanted is None or wanted(data_key):
            keys.append(data_key)

    return found


def _noting_ledgers(runs: Iterable[SegmentBlocks], read: LedgerIds) -> Iterator[SegmentBlocks]:
    """``runs`` passed on as they come (never all held), each one's ledger added to ``read``."""
    for run in runs:
        read.add(run.ledger_id)
        yield run


def _with_lasts(
    groups: Iterable[tuple[tuple[int, int, int], ...]],
) -> Iterator[tuple[tuple[tuple[int, int, int], ...], int | None]]:
    """A segment run's block groups, each with its last entry: the next
    group's first but one; the run's last group ends where its ranges do
    (``None``)."""
    held: tuple[tuple[int, int, int], ...] | None = None
    for group in groups:
        if held is not None:
            yield held, group[0][2] - 1
        held = group
    if held is not None:
        yield held, None


class PulsarOffloadReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: StructType = SCHEMA, skips: Any = None) -> None:
        self.options = parse_read_options(options)
        self.store = Store(self.options.url, self.options.driver_options, skips)  # every partition's, held once
        self.schema = checked_schema(schema)
        self.bounds = {"ledger_id": ANY_VALUE, "entry_id": ANY_VALUE, "publish_time": ANY_VALUE}

    def partitions(self) -> list[Partition]:
        return plan_partitions(
            self.options,
            ledger_bounds=self.bounds["ledger_id"],
            entry_bounds=self.bounds["entry_id"],
            publish_time_bounds=self.bounds["publish_time"],
        )

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(
            partition, (BlockRangePartition, LedgerGroupPartition, PackedRunsPartition, OffloadPartition)
        ):
            return  # nothing was planned: Spark still runs one task, with its own placeholder partition
        schema = to_arrow_schema(self.schema, timezone="UTC")
        if self.options.arrow and self.options.decode is Decode.NONE and not isinstance(partition, OffloadPartition):
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


def make_reader(options: Mapping[str, str], schema: StructType = SCHEMA, skips: Any = None) -> PulsarOffloadReader:
    """The reader for a ``pulsar-offload`` read with ``options``, building
    the columns of ``schema`` (the source's, or a subset a user gave), its
    tasks recording their skips on ``skips`` (see
    :mod:`~offload_core.spark.data_loss`) if given."""
    if parse_read_options(options).filter_pushdown:
        return FilterPushdownReader(options, schema, skips)
    return PulsarOffloadReader(options, schema, skips)
