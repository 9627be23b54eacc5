"""``spark.read.format("kafka-remote")``: Kafka segments tiered by
offload-core, as a DataFrame with the schema of Spark's own Kafka source
(``key``, ``value``, ``topic``, ``partition``, ``offset``, ``timestamp``,
``timestampType``, ``headers``), so a batch job written against live Kafka
runs unchanged on the tiered copy. No broker, no metadata manager: the
store's segment manifests are listed on the driver.

Options:

- ``url`` (or ``.load(URL)``): the store; ``prefix``: the key prefix;
- ``topic``, or Spark's ``subscribe`` (comma-separated topics);
- ``topicId``: comma-separated topic ids (Kafka Uuids; ``unknown`` for
  segments copied before topic ids were kept): only partitions of these
  are read. Needed when a topic name has several ids in the store (a
  topic deleted and recreated): without it, that is an error naming them;
- ``partitions``: comma-separated partition numbers (default: all);
- ``startingOffsets`` / ``endingOffsets``: ``earliest`` / ``latest`` (the
  defaults) or Spark's JSON, ``{"orders": {"0": 42, "1": -2}}`` (-2
  earliest, -1 latest); the ending offset is exclusive, as in Spark;
- ``kafka.isolation.level``: ``read_uncommitted`` (default) or
  ``read_committed``: as Kafka fetches, records of aborted transactions
  are dropped (the ``.txnindex`` of a range's segment and the ones after
  it), and nothing is read from the last stable offset on, where a
  transaction whose marker is not in the remote log begins (the last
  segment's producer snapshot names it), both read as the CLI's
  :class:`RemoteLogReader` reads them (an object that is not the size its
  manifest recorded fails the read, naming it); control records are never
  rows, as in Spark;
- ``includeHeaders``: ``true`` (default) or ``false`` (drops the column);
- ``bytesPerPartition`` (default 128 MiB): one Spark partition per remote
  segment, or per run of its index entries of about this many bytes;
- ``maxDecompressedBytes`` (default 256 MiB): the most a compressed batch
  (or a magic 0/1 wrapper) may expand to before it is refused as damaged
  or hostile;
- ``driver.<name>``: storage-driver options.

A schema given with ``.schema(...)`` may name a subset of the columns
(column pruning).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ..errors import ConfigError
from ..formats import kafka
from ..plugins import open_driver
from ..rsm.layout import LOG_SUFFIX, SegmentManifest, segment_key
from ..rsm.log_batches import read_batches
from ..rsm.log_reader import RemoteLogReader
from ..rsm.remote_log import list_partitions, one_topic_id, parse_topic_id
from ..rsm.segment_stream import RemoteSegmentStream
from ..rsm.storage_manager import DEFAULT_BUFFER_SIZE, RemoteStorageManager
from ..rsm.types import TopicIdPartition, TopicPartition
from .read_options import DEFAULT_BYTES_PER_PARTITION, positive_option, source_driver_options
from .source import KAFKA_SCHEMA

__all__ = ["SegmentRangePartition", "make_reader", "plan_partitions"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EARLIEST, _LATEST = -2, -1


@dataclass(frozen=True)
class SegmentRangePartition(InputPartition):
    """Bytes ``[start, stop)`` of one remote ``.log`` and the offsets
    ``[first, end)`` to keep from them."""

    url: str
    driver_options: tuple[tuple[str, str], ...]
    log_key: str
    topic: str
    partition: int
    start: int
    stop: int
    first: int
    end: int
    aborted: tuple[kafka.AbortedTxn, ...] = ()
    max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT


@dataclass(frozen=True)
class KafkaReadOptions:
    url: str
    prefix: str
    topics: tuple[str, ...]
    topic_ids: frozenset[str] | None
    partitions: frozenset[int] | None
    starting: Mapping[str, Mapping[int, int]] | None
    ending: Mapping[str, Mapping[int, int]] | None
    read_committed: bool
    bytes_per_partition: int
    driver_options: tuple[tuple[str, str], ...]
    max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT


def _offsets(options: Mapping[str, str], name: str) -> Mapping[str, Mapping[int, int]] | None:
    text = options.get(name, "earliest" if name == "startingOffsets" else "latest").strip()
    if text in ("earliest", "latest"):
        if (name, text) == ("startingOffsets", "latest"):
            raise ConfigError("startingOffsets=latest reads nothing from a tiered copy: use earliest or JSON offsets")
        return None
    try:
        parsed = json.loads(text)
        return {str(topic): {int(p): int(o) for p, o in parts.items()} for topic, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        raise ConfigError(f'{name}={text!r} is not earliest, latest or JSON like {{"orders": {{"0": 42}}}}') from None


def parse_options(options: Mapping[str, str]) -> KafkaReadOptions:
    """The source's options, checked; :class:`ConfigError` naming a bad one."""
    url = options.get("url") or options.get("path")
    if not url:
        raise ConfigError('kafka-remote needs the store: .option("url", "s3://bucket/prefix") or .load(URL)')
    topics = tuple(t.strip() for t in (options.get("topic") or options.get("subscribe") or "").split(",") if t.strip())
    if not topics:
        raise ConfigError('kafka-remote needs .option("topic", NAME) (or "subscribe", comma-separated topics)')
    for topic in topics:
        TopicPartition(topic, 0)
    topic_ids = None
    if options.get("topicId"):
        topic_ids = frozenset(parse_topic_id(t.strip()) for t in options["topicId"].split(",") if t.strip())
    partitions = None
    if options.get("partitions"):
        try:
            partitions = frozenset(int(p) for p in options["partitions"].split(","))
        except ValueError:
            raise ConfigError(f"partitions={options['partitions']!r} is not comma-separated numbers") from None
    isolation = options.get("kafka.isolation.level", "read_uncommitted")
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ConfigError(f"kafka.isolation.level={isolation!r}: use read_uncommitted or read_committed")
    try:
        per_partition = int(options.get("bytesPerPartition", DEFAULT_BYTES_PER_PARTITION))
    except ValueError:
        raise ConfigError(f"bytesPerPartition={options['bytesPerPartition']!r} is not a number of bytes") from None
    driver = source_driver_options(options)
    starting, ending = _offsets(options, "startingOffsets"), _offsets(options, "endingOffsets")
    cap = positive_option(options, "maxDecompressedBytes", kafka.DEFAULT_DECOMPRESSED_LIMIT, source="kafka-remote")
    return KafkaReadOptions(str(url), options.get("prefix", ""), topics, topic_ids, partitions, starting, ending,
                            isolation == "read_committed", max(per_partition, 1), driver, cap)  # fmt: skip


def plan_partitions(options: Mapping[str, str] | KafkaReadOptions) -> list[SegmentRangePartition]:
    """One partition per remote segment, or per run of its index entries."""
    parsed = options if isinstance(options, KafkaReadOptions) else parse_options(options)
    planned: list[SegmentRangePartition] = []
    driver_options: dict[str, Any] = dict(parsed.driver_options)
    with open_driver(parsed.url, **driver_options) as driver:
        listed = list_partitions(driver, parsed.prefix)
        for tp in listed:
            if tp.topic not in parsed.topics or (
                parsed.partitions is not None and tp.partition not in parsed.partitions
            ):
                continue
            if parsed.topic_ids is None:
                # One incarnation a name, or an error naming its topic ids.
                one_topic_id(listed, tp.topic_partition, '.option("topicId", ID)')
            elif tp.topic_id not in parsed.topic_ids:
                continue
            # The CLI's reader: where copies overlap, each offset is read from
            # the one segment serving it; read_committed reads the producer
            # snapshot and .txnindex objects through fetch_index's size check.
            reader = RemoteLogReader(RemoteStorageManager(driver, prefix=parsed.prefix), tp)
            first = _bound(parsed.starting, tp, _EARLIEST, 0)
            end = _bound(parsed.ending, tp, _LATEST, 2**63 - 1)
            stable = reader.last_stable_offset if parsed.read_committed else None
            end = end if stable is None else min(end, stable)
            for span in reader.ranges:
                aborted = reader.aborted_transactions(span.segment) if parsed.read_committed else []
                planned += _segment_partitions(parsed, reader.rsm.manifest(span.segment), max(first, span.first),
                                               min(end, span.last + 1), aborted)  # fmt: skip
    return planned


def _bound(given: Mapping[str, Mapping[int, int]] | None, tp: TopicIdPartition, special: int, default: int) -> int:
    if given is None:
        return default
    value = given.get(tp.topic, {}).get(tp.partition, special)
    return default if value in (_EARLIEST, _LATEST) else value


def _segment_partitions(
    parsed: KafkaReadOptions,
    manifest: SegmentManifest,
    first: int,
    end: int,
    aborted: list[kafka.AbortedTxn],
) -> list[SegmentRangePartition]:
    meta = manifest.metadata
    if first >= end or meta.end_offset < first or meta.start_offset >= end:
        return []
    key = segment_key(parsed.prefix, meta.segment_id, meta.start_offset, LOG_SUFFIX)
    wanted = [e for e in manifest.index_entries if e.last_offset >= first and e.first_offset < end]
    runs: list[list[Any]] = []
    for entry in wanted:
        if runs and sum(e.length for e in runs[-1]) + entry.length <= parsed.bytes_per_partition:
            runs[-1].append(entry)
        else:
            runs.append([entry])
    tp = meta.topic_partition
    return [
        SegmentRangePartition(parsed.url, parsed.driver_options, key, tp.topic, tp.partition, run[0].position,
                              run[-1].position + run[-1].length, max(first, run[0].first_offset),
                              min(end, run[-1].last_offset + 1),
                              tuple(t for t in aborted
                                    if t.last_offset >= run[0].first_offset and t.first_offset <= run[-1].last_offset),
                              parsed.max_decompressed_bytes)
        for run in runs
    ]  # fmt: skip


def read_partition(partition: SegmentRangePartition, with_headers: bool = True) -> Iterator[tuple[Any, ...]]:
    """Rows of :data:`KAFKA_SCHEMA`, in offset order."""
    options: dict[str, Any] = dict(partition.driver_options)
    with open_driver(partition.url, **options) as driver:
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
    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.options = parse_options(options)
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
        for row in read_partition(partition, self.with_headers):
            yield row if natural else tuple(row[at] for at in self.picked)


def make_reader(options: Mapping[str, str], schema: StructType = KAFKA_SCHEMA) -> KafkaRemoteReader:
    return KafkaRemoteReader(options, schema)
