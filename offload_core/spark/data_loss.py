"""What ``failOnDataLoss=false`` skipped, counted on the Spark driver.

Each skipped object (a ``kafka-remote`` segment, what a ``pulsar-offload``
partition had left to read of a ledger's object, or an index its planning
on the driver left out) is logged once, at WARNING, on the :data:`LOGGER`
logger, its fields in the record's ``context`` (the executor's log has it
in every case). Two channels bring the skips to the driver, where
:func:`skipped_objects` reads them back as typed columns:

* A skip in a read task is recorded on the application's skip accumulator
  (:class:`SkipRecords`), which the sources registered by
  :func:`~offload_core.spark.register_sources` or
  :func:`~offload_core.spark.get_session` carry to every task: batch reads
  and ``readStream`` micro-batches alike. A task's records reach the driver
  when it runs to its end and succeeds: not a failed attempt's, nor those
  of a task Spark stopped before its end (a ``limit``, ``show`` or
  ``take`` that had its rows), whose skips come back through the log
  capture below alone (a batch read's). A skip that comes back through
  both is counted once (each skip has an id). A failed attempt's skips
  are counted from its log, so a retried task's count again, as do a
  retried stage's and a micro-batch's run again after a restart.
* A skip in planning runs in Spark's planning worker, not in a task, so no
  accumulator reaches it there. A batch read's comes back through Spark's
  Python worker log capture (Spark 4.1 and later, on with
  ``spark.sql.pyspark.worker.logging.enabled``, which
  :func:`~offload_core.spark.get_session` turns on), queryable as
  ``spark.tvf.python_worker_logs()``. Spark 4.3 does not capture a
  ``readStream``'s planning, so a trigger's planning skip (an index
  deleted in the moment between its listing and its read) is carried to a
  task instead: the micro-batch that follows gets one more partition, its
  first (a sink that takes a few rows runs the first tasks until it has
  them), :class:`PlanningSkipsPartition`, whose task records it on the
  accumulator (and the trigger's offset counts it, so that micro-batch
  runs even when nothing new was read). A query stopped before that task
  ends, or a ``foreachBatch`` function that runs nothing of the
  micro-batch, loses the count, not the log line.

Sources registered without the accumulator (``spark.dataSource.register``
of the classes themselves, or any registration on a Spark Connect
session, which has no accumulators) report their tasks' skips through the
log capture alone, which Spark 4.3 gives batch reads only.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.datasource import InputPartition

from ..errors import ConfigError
from ..redaction import redact_url
from .source import SkipRecords

__all__ = [
    "CAPTURE_CONF",
    "LOGGER",
    "PlanningSkipsPartition",
    "SkipRecords",
    "skip_accumulator",
    "log_vanished_ledger",
    "log_vanished_object",
    "log_vanished_segment",
    "skipped_objects",
]

LOGGER = "offload_core.spark.data_loss"
CAPTURE_CONF = "spark.sql.pyspark.worker.logging.enabled"
# Where the application's skip accumulator is kept: on its SparkContext, whose life it shares.
_ACCUMULATOR_ATTRIBUTE = "_offload_core_skips"
# Each skip's id, in its log record and its accumulated record: one that comes back both ways counts once.
_SKIP_ID = "skip_id"

_LOG = logging.getLogger(LOGGER)
# The record's context keys, and the Spark type each is read back as.
_COLUMNS = (("source", "string"), ("store", "string"), ("key", "string"), ("topic", "string"),
            ("partition", "int"), ("first_offset", "bigint"), ("last_offset", "bigint"),
            ("reason", "string"), ("ledger_id", "bigint"), ("first_entry", "bigint"),
            ("last_entry", "bigint"))  # fmt: skip


def skip_accumulator(spark: Any) -> Any:
    """The skip accumulator of ``spark``'s application, made on first use:
    one for every session of the application, as the accumulator is the
    SparkContext's; ``None`` for a Spark Connect session, which has no
    accumulators (its tasks' skips come back through the log capture)."""
    context = getattr(spark, "_sc", None)  # a classic session's SparkContext; a Connect one has none
    if context is None:
        return None
    skips = getattr(context, _ACCUMULATOR_ATTRIBUTE, None)
    if skips is None:
        skips = context.accumulator([], SkipRecords())
        setattr(context, _ACCUMULATOR_ATTRIBUTE, skips)
    return skips


def _skipped(skips: Any, context: dict[str, str], message: str, *args: object) -> dict[str, Any]:
    """Log a skip and record it on ``skips`` if given; the record (its
    fields, ``ts`` in epoch seconds, ``message`` and its id)."""
    # The log capture misses a stream's tasks, the accumulator a task Spark stops early: both are sent, one id.
    context = {**context, _SKIP_ID: uuid.uuid4().hex}
    record = {**context, "ts": time.time(), "message": message % args}
    if skips is not None:
        skips.add([record])
    _LOG.warning(message, *args, extra={"context": context})
    return record


@dataclass(frozen=True)
class PlanningSkipsPartition(InputPartition):
    """A ``readStream`` micro-batch's first partition, which reads nothing: its
    task records on the skip accumulator the skips the stream's planning
    found (records of :func:`log_vanished_object`), which Spark's
    streaming planner cannot send itself. Run again (a retried task, a
    micro-batch run again), each counts once: it keeps its id."""

    records: tuple[dict[str, Any], ...]

    def record(self, skips: Any) -> None:
        """Add the records to ``skips``, the task's skip accumulator."""
        skips.add(list(self.records))


def log_vanished_segment(
    url: str, key: str, topic: str, partition: int, first: int, end: int, skips: Any = None
) -> None:
    """Log that ``kafka-remote`` skipped offsets ``[first, end)`` of
    ``topic``-``partition`` because the segment object ``key`` of store
    ``url`` (printed without secrets) was deleted after the read was
    planned; recorded on ``skips`` too, the task's skip accumulator if it
    has one."""
    context = {"source": "kafka-remote", "store": redact_url(url), "key": key, "topic": topic,
               "partition": str(partition), "first_offset": str(first), "last_offset": str(end - 1),
               "reason": "vanished"}  # fmt: skip
    _skipped(skips, context, "kafka-remote: %s (offsets %d to %d) vanished after the read was planned; skipped, as "
             "failOnDataLoss=false", key, first, end - 1)  # fmt: skip


def log_vanished_ledger(
    url: str, key: str, ledger_id: int, first_entry: int, last_entry: int | None, skips: Any = None
) -> None:
    """Log that ``pulsar-offload`` skipped entries ``first_entry`` to
    ``last_entry`` (inclusive; ``None``: to the end of what ``key`` holds of it) of ledger
    ``ledger_id`` because object ``key`` of store ``url`` (printed without
    secrets) was deleted after the read was planned; recorded on
    ``skips`` too, the task's skip accumulator if it has one."""
    context = {"source": "pulsar-offload", "store": redact_url(url), "key": key, "ledger_id": str(ledger_id),
               "first_entry": str(first_entry), "reason": "vanished"}  # fmt: skip
    if last_entry is not None:  # absent, it reads back as null
        context["last_entry"] = str(last_entry)
    _skipped(skips, context, "pulsar-offload: %s (ledger %d, entries %s) vanished after the read was planned; "
             "skipped, as failOnDataLoss=false", key, ledger_id, entry_span(first_entry, last_entry))  # fmt: skip


def log_vanished_object(url: str, key: str) -> dict[str, Any]:
    """Log that a ``pulsar-offload`` read's planning on the driver left out
    object ``key`` of store ``url`` (printed without secrets), deleted
    between its listing and its read; the skip's record, for a stream's
    planning to carry to a task (:class:`PlanningSkipsPartition`)."""
    context = {"source": "pulsar-offload", "store": redact_url(url), "key": key, "reason": "vanished"}
    return _skipped(None, context, "pulsar-offload: %s vanished while the read was planned; left out, as "
                    "failOnDataLoss=false", key)  # fmt: skip


def entry_span(first: int, last: int | None) -> str:
    """Entries ``first`` to ``last`` (inclusive; ``None``: open-ended), for people."""
    return f"{first} to the object's end" if last is None else f"{first} to {last}"


def skipped_objects(spark: Any) -> Any:
    """The objects ``failOnDataLoss=false`` reads skipped, a DataFrame of
    one row per skip: ``ts`` (timestamp), ``source`` (``kafka-remote`` or
    ``pulsar-offload``), ``store`` (the URL without secrets), ``key``,
    ``topic``, ``partition`` (int), ``first_offset`` and ``last_offset``
    (bigint, inclusive; null for ``pulsar-offload``), ``reason``
    (``vanished``: deleted between planning and reading), ``ledger_id``,
    ``first_entry`` and ``last_entry`` (bigint, the entries skipped,
    inclusive; null for ``kafka-remote``, and ``last_entry`` null for a
    skip to the ledger's end) and ``message``. Read tasks' skips of every
    read of the application, batch and ``readStream``, through its skip
    accumulator, as are a ``readStream`` trigger's planning skips, carried
    to a task; planning's skips of this session's batch reads, through
    its workers' logs (see the module's docstring for what each channel
    reaches, and when a skip counts twice).

    Raises :class:`ConfigError` when ``spark`` cannot collect its workers'
    logs (Spark before 4.1, or ``spark.sql.pyspark.worker.logging.enabled``
    off): a count of nothing would then say nothing."""
    from pyspark.sql import functions as sf

    if not hasattr(spark.tvf, "python_worker_logs"):
        raise ConfigError(f"skipped_objects needs Spark 4.1 or later (this session runs {spark.version}), "
                          "whose Python workers' logs reach the driver")  # fmt: skip
    if str(spark.conf.get(CAPTURE_CONF, "false")).lower() != "true":
        raise ConfigError(f"skipped_objects reads the Python workers' logs, and this session does not collect them: "
                          f"set {CAPTURE_CONF}=true before reading (offload_core.spark.get_session does)")  # fmt: skip
    logs = spark.tvf.python_worker_logs()
    logged = logs.where(sf.col("logger") == LOGGER).select(
        "ts",
        *(sf.col("context").getItem(name).cast(kind).alias(name) for name, kind in _COLUMNS),
        sf.col("msg").alias("message"),
        sf.col("context").getItem(_SKIP_ID).alias(_SKIP_ID),
    )
    skips = skip_accumulator(spark)
    if skips is None:
        return logged.drop(_SKIP_ID)
    accumulated = spark.createDataFrame([_row(record) for record in skips.value], logged.schema)
    # The logs read once (a second read could see a record the first did not): a skip that came back both
    # ways keeps one row, and each row without an id (logged by an offload-core before ids) is its own.
    once = sf.coalesce(sf.col(_SKIP_ID), sf.expr("uuid()"))
    return logged.unionByName(accumulated).withColumn("once", once).dropDuplicates(["once"]).drop("once", _SKIP_ID)


def _row(record: dict[str, Any]) -> tuple[Any, ...]:
    """An accumulated skip as a row of :func:`skipped_objects` (with its id)."""
    # Aware: a naive local time is ambiguous in the hour clocks repeat, and PySpark would take the first.
    fields: list[Any] = [datetime.fromtimestamp(record["ts"], UTC)]
    for name, kind in _COLUMNS:
        value = record.get(name)
        fields.append(value if value is None or kind == "string" else int(value))
    return (*fields, record["message"], record[_SKIP_ID])
