"""``spark.readStream.format("kafka-remote")``: each micro-batch reads the
offsets tiered since the last, as Spark's own Kafka source reads what was
produced since the last.

An offset in Spark's checkpoint is the store (its URL without secrets, and
the key prefix) and, per topic and partition, the next offset to read:
``{"store": "s3://bucket", "prefix": "tiered", "offsets": {"orders": {"0":
1200}}}``. A micro-batch reads ``[start, end)`` of each partition, so a
query restarted from its checkpoint reads every offset once. A partition
first seen after the query started is read from its log start (Spark's
Kafka source reads new partitions from earliest too). ``maxOffsetsPerTrigger``
caps the offsets a micro-batch takes, shared among the partitions by how
far each is behind, as in Spark; ``trigger(availableNow=True)`` reads what
is in the store when the query starts and stops. The reader keeps the
bytes of the segment manifests it has read for the query's run (see
:mod:`offload_core.rsm.manifest_bytes`), so a trigger and its micro-batch
read only the manifests tiered since the last."""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ..errors import ConfigError
from ..redaction import redact_url
from ..rsm.manifest_bytes import ManifestBytes
from .kafka_options import EARLIEST, KafkaReadOptions
from .kafka_positions import available_end, selected_logs, starting_offset
from .kafka_remote import KafkaRemoteReader, plan_partitions
from .planning_reads import open_planning_driver

__all__ = ["KafkaRemoteStreamReader", "make_stream_reader"]

Offsets = dict[str, dict[str, int]]  # topic -> partition (as a JSON key) -> next offset


class KafkaRemoteStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The ``kafka-remote`` streaming reader. :class:`ConfigError` for bad
    options and for a checkpoint written by a query over another store."""

    def __init__(self, options: Mapping[str, str], schema: StructType, skips: Any = None) -> None:
        self.batch = KafkaRemoteReader(options, schema, streaming=True, skips=skips)
        self.options: KafkaReadOptions = self.batch.options
        self.target: Offsets | None = None
        # Spark keeps one reader for a query's run, so each trigger reads only the manifests new since the last.
        self.manifests = ManifestBytes()

    def initialOffset(self) -> dict[str, Any]:
        parsed = self.options
        offsets: Offsets = {}
        with open_planning_driver(parsed.url, parsed.driver_options) as driver:
            for reader in selected_logs(parsed, driver, self.manifests):
                tp = reader.topic_id_partition
                first = starting_offset(parsed, reader)
                if parsed.starting.kind == "latest":
                    first = min(first, available_end(parsed, reader))
                offsets.setdefault(tp.topic, {})[str(tp.partition)] = first
        return self._offset(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        most = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if most is None else ReadMaxRows(most)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = {topic: {p: end for p, (_, end) in parts.items()} for topic, parts in self._extents().items()}

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = self._checked(start)
        spans: dict[tuple[str, str], tuple[int, int]] = {}
        for topic, parts in self._extents().items():
            for partition, (log_start, available) in parts.items():
                first = begin.get(topic, {}).get(partition, log_start)
                if self.target is not None:
                    available = min(available, self.target.get(topic, {}).get(partition, first))
                spans[topic, partition] = (first, max(first, available))
        for topic, kept in begin.items():  # a partition no longer listed keeps its offset
            for partition, first in kept.items():
                spans.setdefault((topic, partition), (first, first))
        ends = _limited(spans, limit.max_rows if isinstance(limit, ReadMaxRows) else None)
        offsets: Offsets = {}
        for (topic, partition), last in sorted(ends.items()):
            offsets.setdefault(topic, {})[partition] = last
        return self._offset(offsets)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[Any]:
        begin, stop = self._checked(start), self._checked(end)
        ranges = {(topic, int(partition)): (begin.get(topic, {}).get(partition, EARLIEST), last)
                  for topic, parts in stop.items() for partition, last in parts.items()}  # fmt: skip
        ranges = {key: (first, last) for key, (first, last) in ranges.items() if first < last}
        return list(plan_partitions(self.options, ranges=ranges, manifests=self.manifests)) if ranges else []

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        return self.batch.read(partition)

    def _extents(self) -> dict[str, dict[str, tuple[int, int]]]:
        """Per topic and partition, the log's start and the end a read may reach now."""
        parsed = self.options
        found: dict[str, dict[str, tuple[int, int]]] = {}
        with open_planning_driver(parsed.url, parsed.driver_options) as driver:
            for reader in selected_logs(parsed, driver, self.manifests):
                tp = reader.topic_id_partition
                found.setdefault(tp.topic, {})[str(tp.partition)] = (reader.log_start_offset or 0,
                                                                      available_end(parsed, reader))  # fmt: skip
        return found

    def _store(self) -> dict[str, str]:
        return {"store": redact_url(self.options.url), "prefix": self.options.prefix}

    def _offset(self, offsets: Offsets) -> dict[str, Any]:
        return {**self._store(), "offsets": offsets}

    def _checked(self, offset: Mapping[str, Any]) -> Offsets:
        """The offsets of a checkpointed offset of this query's store;
        :class:`ConfigError` naming both stores if it is another's, or
        naming what is wrong with one this version cannot read."""
        ours = self._store()
        theirs = {"store": offset.get("store"), "prefix": offset.get("prefix")}
        if theirs != ours:
            raise ConfigError(
                f"this query's checkpoint holds offsets of kafka-remote store {theirs['store']} (prefix "
                f"{theirs['prefix']!r}), but the query reads {ours['store']} (prefix {ours['prefix']!r}): give the "
                "query a new checkpointLocation, or read the store the checkpoint belongs to"
            )
        try:
            # A partition as partitions() takes it (an int); an offset as this version writes it, a JSON integer
            # (a float or a bool would be misread as a position, 1e999 overflows int()).
            offsets = {str(t): {str(int(p)): o for p, o in parts.items()} for t, parts in offset["offsets"].items()}
        except (AttributeError, KeyError, TypeError, ValueError):
            offsets = None
        if offsets is None or any(type(o) is not int for parts in offsets.values() for o in parts.values()):
            shown = reprlib.repr(offset.get("offsets"))  # bounded: a checkpoint may hold thousands of partitions
            raise ConfigError(
                f"this query's checkpoint holds an offset of kafka-remote store {ours['store']} (prefix "
                f"{ours['prefix']!r}) that this version cannot read: its 'offsets' is {shown}, not a map of topics "
                "to partitions to offsets; give the query a new checkpointLocation"
            )
        return offsets


def _limited(spans: Mapping[tuple[str, str], tuple[int, int]], most: int | None) -> dict[tuple[str, str], int]:
    """Each partition's end for this micro-batch: all that is there, or with
    ``most`` a share of it by how far behind the partition is, as Spark's
    Kafka source shares ``maxOffsetsPerTrigger`` (a partition owed less
    than one offset still takes one)."""
    total = sum(end - first for first, end in spans.values())
    if most is None or total <= most:
        return {key: end for key, (_, end) in spans.items()}
    ends = {}
    for key, (first, end) in spans.items():
        share = most * (end - first) / total
        ends[key] = min(end, first + (math.ceil(share) if share < 1 else math.floor(share)))
    return ends


def make_stream_reader(options: Mapping[str, str], schema: StructType, skips: Any = None) -> KafkaRemoteStreamReader:
    """The reader of a ``readStream`` of ``kafka-remote``, its tasks recording
    their skips on ``skips`` (see :mod:`~offload_core.spark.data_loss`) if given."""
    return KafkaRemoteStreamReader(options, schema, skips)
