"""The two exports: a Pulsar topic's offloaded ledgers and segments, and a
Kafka topic's tiered segments, appended to an Iceberg table, each from
where the table's last export stopped."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import NotFoundError
from ...urls import redact_url_text
from ..session import register_sources
from .data_files import RESULT_SCHEMA, RunWriter, TaskResults, io_properties
from .kafka_plan import kafka_start, store_topic_ids
from .pulsar_plan import plan_topic
from .runs import Run, export_records, sweep_abandoned_runs
from .tables import KAFKA, PULSAR, TableKind, default_catalog_properties, open_catalog, open_table, table_properties
from .watermarks import Watermarks, replaced_topic_ids_of, topic_ids_of, watermarks_of

__all__ = ["DEFAULT_STALE_AFTER", "ExportResult", "export_kafka", "export_pulsar"]

#: Seconds after which an unfinished run's files count as a killed run's.
DEFAULT_STALE_AFTER = 3600.0


@dataclass(frozen=True)
class ExportResult:
    """One export: the rows and data files it added, the snapshot it
    committed (``None`` when there was nothing new: nothing is committed
    then), where each topic partition now stands, and the killed runs
    whose files it removed first."""

    table: str
    rows_added: int
    data_files: int
    snapshot_id: int | None
    watermarks: Watermarks
    swept_runs: list[str] = field(default_factory=list)
    replaced_topic_ids: dict[str, list[str]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The summary ``--json`` prints."""
        marks: dict[str, dict[str, list[int]]] = {}
        for (topic, partition), position in sorted(self.watermarks.items()):
            marks.setdefault(topic, {})[str(partition)] = list(position)
        return {"table": self.table, "rows_added": self.rows_added, "data_files": self.data_files,
                "snapshot_id": self.snapshot_id, "watermarks": marks, "swept_runs": self.swept_runs,
                "replaced_topic_ids": self.replaced_topic_ids}  # fmt: skip


@dataclass(frozen=True)
class _Read:
    """What one run reads (``frame``, ``None`` for nothing), the watermarks
    it builds on, the snapshot summary properties it adds and the earlier
    topic incarnations the table holds rows of."""

    frame: Any
    previous: Watermarks
    summary: dict[str, str] = field(default_factory=dict)
    replaced: dict[str, list[str]] = field(default_factory=dict)


def export_pulsar(
    spark: Any,
    data_dir: str | Path,
    topic: str,
    table: str,
    *,
    catalog: Mapping[str, str] | None = None,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> ExportResult:
    """Append what broker data directory ``data_dir`` has tiered of
    ``topic`` (each ``-partition-N`` of a partitioned topic) since the
    table's last export, to Iceberg table ``table``: Pulsar messages, batches
    split, one row each (entries that are not messages as one row with the
    message columns null). ``catalog``: pyiceberg catalog properties (default
    :func:`default_catalog_properties` of ``data_dir``).

    Raises :class:`NotFoundError` for an unknown topic, and when it has
    nothing tiered and the table nothing from it; :class:`ConfigError` for a
    catalog that cannot be reached or a table of another schema;
    :class:`FormatError` naming a damaged object; :class:`ConflictError` when
    another export committed first. Nothing is committed in each case."""
    properties = dict(catalog) if catalog is not None else default_catalog_properties(data_dir)
    origin = table_properties(PULSAR, topic=topic, **{"data-dir": Path(data_dir).resolve()})

    def read(summaries: list[dict[str, str]]) -> _Read:
        marks = watermarks_of(summaries)
        return _Read(frame(marks), marks)

    def frame(marks: Watermarks) -> Any:
        reads = plan_topic(data_dir, topic, marks)
        from pyspark.sql.functions import lit

        frames = [
            spark.read.format("pulsar-offload").options(**dict(read.options)).load()
            .withColumn("topic", lit(read.topic)).withColumn("partition", lit(read.partition).cast("int"))
            for read in reads
        ]  # fmt: skip
        if not frames:
            return None
        union = frames[0]
        for more in frames[1:]:
            union = union.unionByName(more)
        return union

    return _export(spark, PULSAR, table, properties, origin, read, f"Pulsar topic {topic} in {data_dir}",
                   stale_after=stale_after)  # fmt: skip


def export_kafka(
    spark: Any,
    url: str | None,
    topic: str,
    table: str,
    *,
    options: Mapping[str, str] | None = None,
    catalog: Mapping[str, str] | None = None,
    data_dir: str | Path = "./offload-data",
    stale_after: float = DEFAULT_STALE_AFTER,
) -> ExportResult:
    """Append the records of Kafka topic ``topic`` tiered under ``url``
    since the table's last export, to Iceberg table ``table``, in Spark's
    Kafka source schema. ``options`` go to the ``kafka-remote`` source as
    they are (``prefix``, ``topicId``, ``layout``, ``config``,
    ``driver.<name>`` ...); ``startingOffsets`` is the export's. ``url``
    may be ``None`` with ``layout`` ``aiven`` and a ``config`` naming the
    store. ``catalog`` as for :func:`export_pulsar`, its default under
    ``data_dir``.

    Raises as :func:`export_pulsar` does (the source's own errors for its options)."""
    properties = dict(catalog) if catalog is not None else default_catalog_properties(data_dir)
    extra = dict(options or {})
    # Without a URL the config file names the store (the table records the file, not its secrets).
    where = {"url": redact_url_text(url)} if url is not None else {"config": extra.get("config", "")}
    where |= {"topic": topic} | ({"layout": extra["layout"]} if extra.get("layout") else {})
    store = where["url"] if url is not None else f"the store {where['config']} names"
    origin = table_properties(KAFKA, **where)

    def read(summaries: list[dict[str, str]]) -> _Read:
        current = store_topic_ids(url, topic, extra)
        start = kafka_start(watermarks_of(summaries), topic_ids_of(summaries), replaced_topic_ids_of(summaries),
                            current)  # fmt: skip
        reader = spark.read.format("kafka-remote").options(**extra).option("topic", topic)
        if url is not None:
            reader = reader.option("url", url)
        reader = reader.option("includeHeaders", "true")  # the table keeps Spark's Kafka schema, headers included
        if current and "topicId" not in extra:
            # The incarnations the start was worked out for, whatever is tiered meanwhile.
            reader = reader.option("topicId", ",".join(sorted(set(current.values()))))
        starting = start.starting_offsets(topic)
        if starting is not None:
            reader = reader.option("startingOffsets", starting)
        return _Read(reader.load(), start.marks, start.summary(), start.replaced)

    return _export(spark, KAFKA, table, properties, origin, read, f"Kafka topic {topic} under {store}",
                   stale_after=stale_after)  # fmt: skip


def _export(
    spark: Any,
    kind: TableKind,
    table_name: str,
    properties: dict[str, str],
    origin: dict[str, str],
    read_for: Callable[[list[dict[str, str]]], _Read],
    what: str,
    *,
    stale_after: float = DEFAULT_STALE_AFTER,
) -> ExportResult:
    register_sources(spark)
    table = open_table(open_catalog(properties), properties, table_name, kind, origin)
    swept = sweep_abandoned_runs(table, stale_after=stale_after)
    summaries = export_records(table)
    marks = watermarks_of(summaries)
    read = read_for(summaries)
    outcome = None
    if read.frame is not None:
        run = Run(table, kind, table_name, summary=read.summary)
        writer = RunWriter(kind, run.writer_metadata(), io_properties(table.io.properties))
        frame = read.frame.select(*[column.name for column in kind.schema.fields])
        outcome = run.execute(lambda: TaskResults.of(frame.mapInArrow(writer, RESULT_SCHEMA).collect()), read.previous)
    if outcome is None or outcome.snapshot_id is None:
        if not marks:
            raise NotFoundError(f"{what} has nothing tiered: nothing was exported and no snapshot was committed "
                                "to " + table_name)  # fmt: skip
        return ExportResult(table_name, 0, 0, None, marks, swept, replaced_topic_ids_of(summaries))
    return ExportResult(table_name, outcome.rows, outcome.data_files, outcome.snapshot_id, outcome.watermarks, swept,
                        read.replaced)  # fmt: skip
