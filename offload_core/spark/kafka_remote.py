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
column. ``bytesPerPartition`` (default 128 MiB): one Spark
partition per remote segment, or per run of its index entries of about
this many bytes; ``maxDecompressedBytes`` (default 256 MiB): the most a
compressed batch (or a magic 0/1 wrapper) may expand to before it is
refused as damaged or hostile; ``driver.<name>``: storage-driver options.

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
reads the chunks holding its bytes.

A schema given with ``.schema(...)`` may name a subset of the columns
(column pruning).
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..errors import ConfigError, FormatError, NotFoundError
from ..formats import kafka
from ..rsm.aiven.storage import AivenRemoteStorage
from ..rsm.layout import LOG_SUFFIX, SegmentManifest, segment_key
from ..rsm.log_batches import read_batches
from ..rsm.log_reader import RemoteLogReader
from ..rsm.segment_stream import RemoteSegmentStream
from ..rsm.storage_manager import DEFAULT_BUFFER_SIZE, RemoteStorageManager
from ..rsm.types import RemoteLogSegmentMetadata
from .data_loss import log_vanished_segment
from .kafka_options import EARLIEST, KafkaReadOptions, parse_options
from .kafka_positions import checked_start, ending_offset, selected_logs, starting_offset
from .kafka_remote_aiven import AivenSegmentSpec, aiven_stream, planned_ranges, segment_spec
from .planning_reads import open_planning_driver
from .source import KAFKA_SCHEMA
from .store_tasks import Store

__all__ = ["SegmentRangePartition", "make_reader", "plan_partitions"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SegmentRangePartition(InputPartition):
    """Bytes ``[start, stop)`` of one remote ``.log`` and the offsets
    ``[first, end)`` to keep from them (the store is the reader's: see
    :func:`read_partition`)."""

    log_key: str
    topic: str
    partition: int
    start: int
    stop: int
    first: int
    end: int
    aborted: tuple[kafka.AbortedTxn, ...] = ()
    max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT
    fail_on_data_loss: bool = True
    aiven: AivenSegmentSpec | None = None


_Piece = tuple[RemoteLogReader, RemoteLogSegmentMetadata, int, int, list[kafka.AbortedTxn]]


def plan_partitions(
    options: Mapping[str, str] | KafkaReadOptions, *, ranges: Mapping[tuple[str, int], tuple[int, int]] | None = None
) -> list[SegmentRangePartition]:
    """One partition per remote segment, or per run of its index entries;
    more for ``minPartitions`` and ``maxRecordsPerPartition``. With
    ``ranges`` (a streaming micro-batch: ``[first, end)`` by topic and
    partition, ``first`` -2 for the log's start), exactly those offsets
    of the partitions named, else those
    the starting and ending options name. Raises :class:`ConfigError` for
    bad options, :class:`NotFoundError` for offsets lost with
    ``failOnDataLoss``."""
    parsed = options if isinstance(options, KafkaReadOptions) else parse_options(options)
    planned: list[SegmentRangePartition] = []
    # A log's reader holds every manifest of its partition: its partitions are cut while it is the
    # one open, and it is let go, so planning holds one partition's manifests at a time. Only
    # minPartitions, which may cut everything again smaller, keeps the pieces (and their readers).
    pieces: list[_Piece] = []
    keep_pieces = bool(parsed.min_partitions)
    with open_planning_driver(parsed.url, parsed.driver_options) as driver:
        for reader in selected_logs(parsed, driver):
            tp = reader.topic_id_partition
            if ranges is None:
                first, end = starting_offset(parsed, reader), ending_offset(parsed, reader)
            elif (tp.topic, tp.partition) in ranges:
                first, end = ranges[tp.topic, tp.partition]
                # EARLIEST: a partition the query had not seen before this micro-batch.
                first = reader.log_start_offset or 0 if first == EARLIEST else checked_start(parsed, reader, first)
            else:
                continue
            stable = reader.last_stable_offset if parsed.read_committed else None
            end = end if stable is None else min(end, stable)
            for span in reader.ranges:
                low, high = max(first, span.first), min(end, span.last + 1)
                if low < high:
                    aborted = reader.aborted_transactions(span.segment) if parsed.read_committed else []
                    piece = (reader, span.segment, low, high, aborted)
                    planned += _piece_partitions(parsed, piece, parsed.bytes_per_partition)
                    if keep_pieces:
                        pieces.append(piece)
        wanted = parsed.min_partitions or 0
        if len(planned) < wanted:
            # Spark's minPartitions: smaller runs of index entries first, then offset ranges cut in two.
            size = max(1, sum(p.stop - p.start for p in planned) // wanted)
            planned = [p for piece in pieces for p in _piece_partitions(parsed, piece, size)]
            planned = _halved(planned, wanted)
    return planned


def _piece_partitions(parsed: KafkaReadOptions, piece: _Piece, bytes_per_partition: int) -> list[SegmentRangePartition]:
    reader, meta, first, end, aborted = piece
    if isinstance(reader.rsm, AivenRemoteStorage):
        return _aiven_partitions(parsed, reader.rsm, meta, first, end, aborted, bytes_per_partition)
    assert isinstance(reader.rsm, RemoteStorageManager)
    return _segment_partitions(parsed, reader.rsm.manifest(meta), first, end, aborted, bytes_per_partition)


def _segment_partitions(
    parsed: KafkaReadOptions,
    manifest: SegmentManifest,
    first: int,
    end: int,
    aborted: list[kafka.AbortedTxn],
    bytes_per_partition: int,
) -> list[SegmentRangePartition]:
    """Runs of the segment's index entries of up to ``bytes_per_partition``
    (one entry at least) and ``maxRecordsPerPartition`` offsets; an entry
    holding more offsets than that is read by several partitions, each
    keeping its share."""
    meta = manifest.metadata
    if first >= end or meta.end_offset < first or meta.start_offset >= end:
        return []
    key = segment_key(parsed.prefix, meta.segment_id, meta.start_offset, LOG_SUFFIX)
    wanted = [e for e in manifest.index_entries if e.last_offset >= first and e.first_offset < end]
    most = parsed.max_records_per_partition or 2**63
    runs: list[list[Any]] = []
    for entry in wanted:
        if runs and (
            sum(e.length for e in runs[-1]) + entry.length <= bytes_per_partition
            and min(end, entry.last_offset + 1) - max(first, runs[-1][0].first_offset) <= most
        ):
            runs[-1].append(entry)
        else:
            runs.append([entry])
    tp = meta.topic_partition
    planned = []
    for run in runs:
        low, high = max(first, run[0].first_offset), min(end, run[-1].last_offset + 1)
        txns = tuple(t for t in aborted
                     if t.last_offset >= run[0].first_offset and t.first_offset <= run[-1].last_offset)  # fmt: skip
        for at in range(low, high, most):
            planned.append(SegmentRangePartition(key, tp.topic, tp.partition, run[0].position,
                                                 run[-1].position + run[-1].length, at, min(high, at + most), txns,
                                                 parsed.max_decompressed_bytes, parsed.fail_on_data_loss))  # fmt: skip
    return planned


def _halved(planned: list[SegmentRangePartition], wanted: int) -> list[SegmentRangePartition]:
    """``planned`` with the partitions holding the most offsets cut in two
    until there are ``wanted`` (or none holds two offsets)."""
    while len(planned) < wanted:
        widest = max(range(len(planned)), key=lambda at: planned[at].end - planned[at].first, default=None)
        if widest is None or planned[widest].end - planned[widest].first < 2:
            break
        cut = planned[widest]
        middle = (cut.first + cut.end) // 2
        planned[widest : widest + 1] = [replace(cut, end=middle), replace(cut, first=middle)]
    return planned


def _aiven_partitions(
    parsed: KafkaReadOptions,
    aiven: AivenRemoteStorage,
    meta: RemoteLogSegmentMetadata,
    first: int,
    end: int,
    aborted: list[kafka.AbortedTxn],
    bytes_per_partition: int,
) -> list[SegmentRangePartition]:
    if first >= end:
        return []
    assert parsed.aiven is not None
    spec = segment_spec(aiven, meta, parsed.aiven.private_keys)
    tp = meta.topic_partition
    most = parsed.max_records_per_partition or 2**63
    # maxRecordsPerPartition: each share of a range's own offsets reads its chunks and keeps its own records.
    return [SegmentRangePartition(spec.manifest_key.with_suffix("log").key, tp.topic, tp.partition, start, stop, at,
                                  min(high, at + most), tuple(aborted), parsed.max_decompressed_bytes,
                                  parsed.fail_on_data_loss, spec)
            for start, stop, low, high in planned_ranges(aiven, meta, first, end, bytes_per_partition)
            for at in range(low, high, most)]  # fmt: skip


def read_partition(
    store: Store, partition: SegmentRangePartition, with_headers: bool = True
) -> Iterator[tuple[Any, ...]]:
    """Rows of :data:`KAFKA_SCHEMA` of one partition of ``store``, in offset order. :class:`FormatError`
    names the segment's object. A segment deleted since the read was planned
    raises :class:`NotFoundError` naming it, or with
    ``failOnDataLoss=false`` gives no rows and one record on
    :data:`~offload_core.spark.data_loss.LOGGER`."""
    try:
        yield from _segment_rows(store, partition, with_headers)
    except FormatError as exc:
        if partition.log_key in str(exc):
            raise
        raise FormatError(f"{partition.log_key}: {exc}") from None
    except NotFoundError as exc:
        if partition.fail_on_data_loss:
            raise NotFoundError(f"{partition.log_key} (offsets {partition.first} to {partition.end - 1}) vanished "
                                f"after the read was planned: {exc}; set failOnDataLoss=false to skip what is gone"
                                ) from None  # fmt: skip
        log_vanished_segment(store.url, partition.log_key, partition.topic, partition.partition, partition.first,
                             partition.end)  # fmt: skip


def _segment_rows(store: Store, partition: SegmentRangePartition, with_headers: bool) -> Iterator[tuple[Any, ...]]:
    with store.open() as driver:
        if partition.aiven is not None:
            raw = aiven_stream(partition.aiven, driver, partition.start, partition.stop)
        else:
            raw = RemoteSegmentStream(driver, partition.log_key, partition.start, partition.stop,
                                      buffer_size=DEFAULT_BUFFER_SIZE)  # fmt: skip
        with io.BufferedReader(raw, buffer_size=64 * 1024) as stream:
            cap = partition.max_decompressed_bytes
            for batch, data in read_batches(stream, partition.start, partition.stop, limit=cap):
                if batch.is_control or batch.last_offset < partition.first or batch.base_offset >= partition.end:
                    continue
                if batch.is_transactional and kafka.is_aborted(partition.aborted, batch):
                    continue
                # Spark's timestampType is Kafka's TimestampType id: magic 0 has none (-1).
                kind = -1 if batch.magic == 0 else 1 if batch.log_append_time else 0
                for record in kafka.iter_records(data, batch, limit=cap):
                    if partition.first <= record.offset < partition.end:
                        row = (record.key, record.value, partition.topic, partition.partition, record.offset,
                               _EPOCH + timedelta(milliseconds=record.timestamp), kind)  # fmt: skip
                        yield row + ([(h.key, h.value) for h in record.headers],) if with_headers else row


class KafkaRemoteReader(DataSourceReader):
    """The batch reader; a streaming reader reads its micro-batches' partitions with one."""

    def __init__(self, options: Mapping[str, str], schema: StructType, *, streaming: bool = False) -> None:
        self.options = parse_options(options, streaming=streaming)
        self.store = Store(self.options.url, self.options.driver_options)  # every partition's, held once
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


def make_reader(options: Mapping[str, str], schema: StructType = KAFKA_SCHEMA) -> KafkaRemoteReader:
    return KafkaRemoteReader(options, schema)
