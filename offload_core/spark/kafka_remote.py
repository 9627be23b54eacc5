"""``spark.read.format("kafka-remote")``: Kafka segments tiered by
offload-core, as a DataFrame with the schema of Spark's own Kafka source
(``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp``,
``timestampType``, ``headers``), so a batch job written against live Kafka
runs unchanged on the tiered copy. No broker, no metadata manager: the
store's segment manifests are listed on the driver.

Options (parsed in :mod:`offload_core.spark.kafka_options`): ``url`` (or
``.load(URL)``) and ``prefix`` name the store; the topics are Spark's
``subscribe``, ``subscribePattern`` or ``assign`` (or our ``topic``),
narrowed by ``partitions`` and ``topicId`` (needed when a topic name has
several ids in the store, a topic deleted and recreated); Spark's
``startingOffsets`` / ``endingOffsets`` (``earliest`` / ``latest`` or JSON,
-2 earliest, -1 latest; the end is exclusive), ``startingTimestamp`` /
``endingTimestamp`` and ``startingOffsetsByTimestamp`` /
``endingOffsetsByTimestamp`` (the first offset whose record's timestamp is
at or after it, found through the segments' time indexes);
``kafka.isolation.level`` ``read_committed`` reads as a Kafka
read_committed fetch (records of aborted transactions dropped, as the
``.txnindex`` of a range's segment and the ones after it name them, and
nothing read from the last stable offset on, which the last segment's
producer snapshot names), as the CLI's :class:`RemoteLogReader` reads;
control records are never rows, as in Spark. ``failOnDataLoss`` (default
true): an object gone between planning and reading, or a starting offset
retention removed, fails the query naming it; false skips it with a
logged line (a vanished object's on the data-loss logger, which
:func:`~offload_core.spark.skipped_objects` reads back). ``minPartitions``
and ``maxRecordsPerPartition`` split the read further;
``includeHeaders`` (default false, as in Spark) adds the ``headers``
column. ``bytesPerPartition`` (default 128 MiB): consecutive remote
segments of one topic-partition packed into one Spark partition up to
this many bytes, each counting its bytes and :data:`OPEN_COST_BYTES` (as
Spark's file sources count ``spark.sql.files.openCostInBytes``), so 100,000
small segments are some 3,200 tasks and a plan of some 60 bytes a segment
(:mod:`~offload_core.spark.kafka_partition`); a larger segment is cut into
runs of its index entries of about this many bytes. A segment vanished
from a packed partition fails or is skipped alone, as ``failOnDataLoss``
says, the partition's other segments still read. ``maxDecompressedBytes``
(default 256 MiB): the most a compressed batch (or a magic 0/1 wrapper)
may expand to before it is refused as damaged or hostile;
``driver.<name>``: storage-driver options.

``layout``: ``ours`` (default: what ``offload kafka copy`` writes) or
``aiven``: segments Aiven's tiered-storage plugin wrote, with ``config``
(the broker's properties file: its ``rsm.config.*`` keys give the store,
the key prefix and the key pairs, and ``url`` may be left out) and any
``rsm.config.*`` key as an option of its own (replacing the file's).
In our layout ``config`` and ``rsm.config.*`` are read as ``offload kafka
--config`` reads them: our RemoteStorageManager's ``storage.url``,
``storage.option.*`` and ``key.prefix`` give the store and the prefix
(``url`` and ``prefix`` win). With the aiven layout,
partitions are planned from each segment's decoded offset index; each
reads the chunks holding its bytes, and is never packed with another
segment's (its spec carries the segment's whole manifest).

A schema given with ``.schema(...)`` may name a subset of the columns
(column pruning).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..errors import ConfigError, FormatError, NotFoundError
from ..formats import kafka
from ..rsm.aiven.storage import AivenRemoteStorage
from ..rsm.layout import SegmentManifest
from ..rsm.log_batches import read_batches
from ..rsm.log_reader import RemoteLogReader
from ..rsm.manifest_bytes import ManifestBytes
from ..rsm.segment_stream import RemoteSegmentStream
from ..rsm.storage_manager import DEFAULT_BUFFER_SIZE, RemoteStorageManager
from ..rsm.types import RemoteLogIndexEntry, RemoteLogSegmentMetadata, TopicIdPartition
from ..storage import StorageDriver
from .data_loss import log_vanished_segment
from .kafka_options import EARLIEST, KafkaReadOptions, parse_options
from .kafka_partition import SegmentRange, SegmentRangePartition, pack_ranges
from .kafka_positions import checked_start, ending_offset, selected_logs, starting_offset
from .kafka_remote_aiven import AivenSegmentSpec, aiven_stream, planned_ranges, segment_spec
from .packing import packed
from .planning_reads import open_planning_driver
from .read_options import OPEN_COST_BYTES
from .source import KAFKA_SCHEMA
from .store_tasks import Store

__all__ = ["SegmentRangePartition", "make_reader", "plan_partitions"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_Piece = tuple[RemoteLogReader, RemoteLogSegmentMetadata, int, int, list[kafka.AbortedTxn]]
# A range to read, with its segment's topic-partition, the aborted transactions it needs and its Aiven spec.
_Cut = tuple[TopicIdPartition, SegmentRange, tuple[kafka.AbortedTxn, ...], AivenSegmentSpec | None]


def plan_partitions(
    options: Mapping[str, str] | KafkaReadOptions,
    *,
    ranges: Mapping[tuple[str, int], tuple[int, int]] | None = None,
    manifests: ManifestBytes | None = None,
) -> list[SegmentRangePartition]:
    """Consecutive small segments of one topic-partition packed into one
    partition up to ``bytesPerPartition`` (each counting its bytes and
    :data:`OPEN_COST_BYTES`) and ``maxRecordsPerPartition`` offsets; a
    larger segment cut into runs of its index entries; more partitions for
    ``minPartitions``. A segment of the aiven layout is never packed with
    another. With ``ranges`` (a streaming micro-batch: ``[first, end)`` by
    topic and partition, ``first`` -2 for the log's start), exactly those
    offsets of the partitions named, else those the starting and ending
    options name; with ``manifests`` (a streaming query's), a manifest it
    holds is not read again. Raises :class:`ConfigError` for bad options,
    :class:`NotFoundError` for offsets lost with ``failOnDataLoss``."""
    parsed = options if isinstance(options, KafkaReadOptions) else parse_options(options)
    planned: list[SegmentRangePartition] = []
    # A log's reader holds every manifest of its partition: its partitions are cut while it is the
    # one open, and it is let go before the next is listed, so planning holds one partition's manifests
    # at a time. Only minPartitions, which may cut everything again smaller, keeps the pieces (and their
    # readers).
    pieces: list[_Piece] = []
    keep_pieces = bool(parsed.min_partitions)
    with open_planning_driver(parsed.url, parsed.driver_options) as driver:
        for reader in selected_logs(parsed, driver, manifests):
            log_pieces = _selected_pieces(parsed, reader, ranges)
            del reader  # else the loop would still hold it while the next partition is listed
            if keep_pieces:
                log_pieces = list(log_pieces)
                pieces += log_pieces
            planned += _packed(parsed, log_pieces, parsed.bytes_per_partition)
        wanted = parsed.min_partitions or 0
        if len(planned) < wanted:
            # Spark's minPartitions: smaller partitions first, then offset ranges cut in two.
            size = max(1, sum(r.stop - r.start for p in planned for r in p.ranges) // wanted)
            planned = _halved(list(_packed(parsed, pieces, size)), wanted)
    return planned


def _selected_pieces(
    parsed: KafkaReadOptions, reader: RemoteLogReader, ranges: Mapping[tuple[str, int], tuple[int, int]] | None
) -> Iterable[_Piece]:
    """The pieces of ``reader``'s log the read wants: with ``ranges``, the
    offsets it gives the log (none if it does not name the log), else those the
    starting and ending options bound."""
    tp = reader.topic_id_partition
    if ranges is None:
        first, end = starting_offset(parsed, reader), ending_offset(parsed, reader)
    elif (tp.topic, tp.partition) in ranges:
        first, end = ranges[tp.topic, tp.partition]
        # EARLIEST: a partition the query had not seen before this micro-batch.
        first = reader.log_start_offset or 0 if first == EARLIEST else checked_start(parsed, reader, first)
    else:
        return ()
    stable = reader.last_stable_offset if parsed.read_committed else None
    end = end if stable is None else min(end, stable)
    return _log_pieces(parsed, reader, first, end)


def _log_pieces(parsed: KafkaReadOptions, reader: RemoteLogReader, first: int, end: int) -> Iterator[_Piece]:
    for span in reader.ranges:
        low, high = max(first, span.first), min(end, span.last + 1)
        if low < high:
            aborted = reader.aborted_transactions(span.segment) if parsed.read_committed else []
            yield (reader, span.segment, low, high, aborted)


def _cuts(parsed: KafkaReadOptions, pieces: Iterable[_Piece], bytes_per_partition: int) -> Iterator[_Cut]:
    for reader, meta, first, end, aborted in pieces:
        if isinstance(reader.rsm, AivenRemoteStorage):
            yield from _aiven_cuts(parsed, reader.rsm, meta, first, end, aborted, bytes_per_partition)
        else:
            assert isinstance(reader.rsm, RemoteStorageManager)
            yield from _segment_cuts(parsed, reader.rsm.manifest(meta), first, end, aborted, bytes_per_partition)


def _packed(
    parsed: KafkaReadOptions, pieces: Iterable[_Piece], bytes_per_partition: int
) -> Iterator[SegmentRangePartition]:
    """The ``pieces``' cuts, consecutive ones of one topic-partition as one partition while
    their bytes and open costs stay within ``bytes_per_partition`` and their
    offsets within ``maxRecordsPerPartition`` (one cut at least); an Aiven
    cut alone."""
    most = parsed.max_records_per_partition or 2**63

    def costs(cut: _Cut) -> tuple[int, int]:
        return cut[1].stop - cut[1].start + OPEN_COST_BYTES, cut[1].end - cut[1].first

    def joins(first: _Cut, cut: _Cut) -> bool:
        return cut[0] == first[0] and cut[3] is None and first[3] is None

    for group in packed(_cuts(parsed, pieces, bytes_per_partition), (bytes_per_partition, most), costs, joins=joins):
        txns = tuple(dict.fromkeys(t for cut in group for t in cut[2]))
        yield SegmentRangePartition(group[0][0], parsed.prefix, pack_ranges(cut[1] for cut in group), txns,
                                    parsed.max_decompressed_bytes, parsed.fail_on_data_loss, group[0][3])  # fmt: skip


def _segment_cuts(
    parsed: KafkaReadOptions,
    manifest: SegmentManifest,
    first: int,
    end: int,
    aborted: list[kafka.AbortedTxn],
    bytes_per_partition: int,
) -> list[_Cut]:
    """Runs of the segment's index entries of up to ``bytes_per_partition``
    (one entry at least) and ``maxRecordsPerPartition`` offsets; an entry
    holding more offsets than that is read by several cuts, each keeping
    its share."""
    meta = manifest.metadata
    if first >= end or meta.end_offset < first or meta.start_offset >= end:
        return []
    wanted = (e for e in manifest.index_entries if e.last_offset >= first and e.first_offset < end)
    most = parsed.max_records_per_partition or 2**63

    def joins(head: RemoteLogIndexEntry, entry: RemoteLogIndexEntry) -> bool:
        # Offsets counted from the run's first to the entry's last, gaps between batches included.
        return min(end, entry.last_offset + 1) - max(first, head.first_offset) <= most

    cuts: list[_Cut] = []
    for run in packed(wanted, (bytes_per_partition,), lambda entry: (entry.length,), joins=joins):
        low, high = max(first, run[0].first_offset), min(end, run[-1].last_offset + 1)
        txns = tuple(t for t in aborted
                     if t.last_offset >= run[0].first_offset and t.first_offset <= run[-1].last_offset)  # fmt: skip
        for at in range(low, high, most):
            segment = SegmentRange(meta.segment_id.id, meta.start_offset, run[0].position,
                                   run[-1].position + run[-1].length, at, min(high, at + most))  # fmt: skip
            cuts.append((meta.topic_id_partition, segment, txns, None))
    return cuts


def _halved(planned: list[SegmentRangePartition], wanted: int) -> list[SegmentRangePartition]:
    """``planned`` with the partitions holding the most offsets cut in two
    (a packed one between its ranges, one range in the middle of its
    offsets) until there are ``wanted`` (or none holds two offsets)."""
    while len(planned) < wanted:
        widest = max(range(len(planned)), key=lambda at: planned[at].offset_count, default=None)
        if widest is None or planned[widest].offset_count < 2:
            break
        cut = planned[widest]
        segments = cut.ranges
        if len(segments) > 1:
            halves = [segments[: len(segments) // 2], segments[len(segments) // 2 :]]
        else:
            (only,) = segments
            middle = (only.first + only.end) // 2
            halves = [[only._replace(end=middle)], [only._replace(first=middle)]]
        planned[widest : widest + 1] = [replace(cut, packed=pack_ranges(half)) for half in halves]
    return planned


def _aiven_cuts(
    parsed: KafkaReadOptions,
    aiven: AivenRemoteStorage,
    meta: RemoteLogSegmentMetadata,
    first: int,
    end: int,
    aborted: list[kafka.AbortedTxn],
    bytes_per_partition: int,
) -> list[_Cut]:
    if first >= end:
        return []
    assert parsed.aiven is not None
    spec = segment_spec(aiven, meta, parsed.aiven.private_keys)
    most = parsed.max_records_per_partition or 2**63
    # maxRecordsPerPartition: each share of a range's own offsets reads its chunks and keeps its own records.
    return [(meta.topic_id_partition, SegmentRange(meta.segment_id.id, meta.start_offset, start, stop, at,
                                                   min(high, at + most)), tuple(aborted), spec)
            for start, stop, low, high in planned_ranges(aiven, meta, first, end, bytes_per_partition)
            for at in range(low, high, most)]  # fmt: skip


def read_partition(
    store: Store, partition: SegmentRangePartition, with_headers: bool = True
) -> Iterator[tuple[Any, ...]]:
    """Rows of :data:`KAFKA_SCHEMA` of one partition of ``store``, range
    after range, in offset order. :class:`FormatError` names the segment's
    object. A segment deleted since the read was planned raises
    :class:`NotFoundError` naming it and its offsets, or with
    ``failOnDataLoss=false`` gives no rows, one record on
    :data:`~offload_core.spark.data_loss.LOGGER`, and the partition's other
    ranges are still read."""
    with store.open() as driver:
        for segment in partition.ranges:
            key = partition.log_key(segment)
            try:
                yield from _segment_rows(driver, partition, key, segment, with_headers)
            except FormatError as exc:
                if key in str(exc):
                    raise
                raise FormatError(f"{key}: {exc}") from None
            except NotFoundError as exc:
                if partition.fail_on_data_loss:
                    raise NotFoundError(f"{key} (offsets {segment.first} to {segment.end - 1}) vanished after the "
                                        f"read was planned: {exc}; set failOnDataLoss=false to skip what is gone"
                                        ) from None  # fmt: skip
                log_vanished_segment(store.url, key, partition.topic, partition.partition, segment.first, segment.end,
                                     store.skips)  # fmt: skip


def _segment_rows(driver: StorageDriver, partition: SegmentRangePartition, key: str, segment: SegmentRange,
                  with_headers: bool) -> Iterator[tuple[Any, ...]]:  # fmt: skip
    first, end = segment.first, segment.end
    if partition.aiven is not None:
        raw = aiven_stream(partition.aiven, driver, segment.start, segment.stop)
    else:
        raw = RemoteSegmentStream(driver, key, segment.start, segment.stop, buffer_size=DEFAULT_BUFFER_SIZE)
    with io.BufferedReader(raw, buffer_size=64 * 1024) as stream:
        cap = partition.max_decompressed_bytes
        for batch, data in read_batches(stream, segment.start, segment.stop, limit=cap):
            if batch.is_control or batch.last_offset < first or batch.base_offset >= end:
                continue
            if batch.is_transactional and kafka.is_aborted(partition.aborted, batch):
                continue
            # Spark's timestampType is Kafka's TimestampType id: magic 0 has none (-1).
            kind = -1 if batch.magic == 0 else 1 if batch.log_append_time else 0
            for record in kafka.iter_records(data, batch, limit=cap):
                if first <= record.offset < end:
                    row = (record.key, record.value, partition.topic, partition.partition, record.offset,
                           _EPOCH + timedelta(milliseconds=record.timestamp), kind)  # fmt: skip
                    yield row + ([(h.key, h.value) for h in record.headers],) if with_headers else row


class KafkaRemoteReader(DataSourceReader):
    """The batch reader; a streaming reader reads its micro-batches' partitions with one."""

    def __init__(
        self, options: Mapping[str, str], schema: StructType, *, streaming: bool = False, skips: Any = None
    ) -> None:
        self.options = parse_options(options, streaming=streaming)
        self.store = Store(self.options.url, self.options.driver_options, skips)  # every partition's, held once
        self.schema = schema
        names = [field.name for field in KAFKA_SCHEMA.fields]
        unknown = [field.name for field in schema.fields if field.name not in names]
        if unknown:
            raise ConfigError(f"kafka-remote has no column(s) {unknown}; its columns are {names}")
        self.picked = [names.index(field.name) for field in schema.fields]
        self.with_headers = "headers" in [field.name for field in schema.fields]

    def partitions(self) -> list[SegmentRangePartition]:
        return plan_partitions(self.options)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if not isinstance(partition, SegmentRangePartition):
            return  # nothing was planned: Spark still runs one task, with its own placeholder partition
        natural = self.picked == list(range(len(self.picked)))
        for row in read_partition(self.store, partition, self.with_headers):
            yield row if natural else tuple(row[at] for at in self.picked)


def make_reader(options: Mapping[str, str], schema: StructType = KAFKA_SCHEMA, skips: Any = None) -> KafkaRemoteReader:
    return KafkaRemoteReader(options, schema, skips=skips)
