"""What ``failOnDataLoss=false`` skipped, counted on the Spark driver.

A Python data source reads in Python workers, where there are no
accumulators or custom metrics; the one channel back to the driver is
Spark's Python worker log capture (Spark 4.1 and later, on with
``spark.sql.pyspark.worker.logging.enabled``, which
:func:`~offload_core.spark.get_session` turns on): a record a worker logs
while it reads is queryable as ``spark.tvf.python_worker_logs()``. Each
skipped object (a ``kafka-remote`` segment, what a ``pulsar-offload``
partition had left to read of a ledger's object, or an index its planning
on the driver left out) is logged once, at
WARNING, on the :data:`LOGGER` logger, its fields in the record's
``context``; :func:`skipped_objects` reads them
back as typed columns. With the capture off the record is still logged, to
the worker's stderr (the executor's log).

Spark 4.3's streaming micro-batches start their readers' workers without
the session's id, so a skip in a ``readStream`` query is logged only to the
executor's log: ``skipped_objects`` counts batch reads only.
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import ConfigError
from ..redaction import redact_url

__all__ = [
    "CAPTURE_CONF",
    "LOGGER",
    "log_vanished_ledger",
    "log_vanished_object",
    "log_vanished_segment",
    "skipped_objects",
]

LOGGER = "offload_core.spark.data_loss"
CAPTURE_CONF = "spark.sql.pyspark.worker.logging.enabled"

_LOG = logging.getLogger(LOGGER)
# The record's context keys, and the Spark type each is read back as.
_COLUMNS = (("source", "string"), ("store", "string"), ("key", "string"), ("topic", "string"),
            ("partition", "int"), ("first_offset", "bigint"), ("last_offset", "bigint"),
            ("reason", "string"), ("ledger_id", "bigint"), ("first_entry", "bigint"),
            ("last_entry", "bigint"))  # fmt: skip


def log_vanished_segment(url: str, key: str, topic: str, partition: int, first: int, end: int) -> None:
    """Log that ``kafka-remote`` skipped offsets ``[first, end)`` of
    ``topic``-``partition`` because the segment object ``key`` of store
    ``url`` (printed without secrets) was deleted after the read was
    planned."""
    context = {"source": "kafka-remote", "store": redact_url(url), "key": key, "topic": topic,
               "partition": str(partition), "first_offset": str(first), "last_offset": str(end - 1),
               "reason": "vanished"}  # fmt: skip
    _LOG.warning("kafka-remote: %s (offsets %d to %d) vanished after the read was planned; skipped, as "
                 "failOnDataLoss=false", key, first, end - 1, extra={"context": context})  # fmt: skip


def log_vanished_ledger(url: str, key: str, ledger_id: int, first_entry: int, last_entry: int | None) -> None:
    """Log that ``pulsar-offload`` skipped entries ``first_entry`` to
    ``last_entry`` (inclusive; ``None``: to the end of what ``key`` holds of it) of ledger
    ``ledger_id`` because object ``key`` of store ``url`` (printed without
    secrets) was deleted after the read was planned."""
    context = {"source": "pulsar-offload", "store": redact_url(url), "key": key, "ledger_id": str(ledger_id),
               "first_entry": str(first_entry), "reason": "vanished"}  # fmt: skip
    if last_entry is not None:  # absent, it reads back as null
        context["last_entry"] = str(last_entry)
    _LOG.warning("pulsar-offload: %s (ledger %d, entries %s) vanished after the read was planned; skipped, as "
                 "failOnDataLoss=false", key, ledger_id, entry_span(first_entry, last_entry),
                 extra={"context": context})  # fmt: skip


def log_vanished_object(url: str, key: str) -> None:
    """Log that a ``pulsar-offload`` read's planning on the driver left out
    object ``key`` of store ``url`` (printed without secrets), deleted
    between its listing and its read."""
    context = {"source": "pulsar-offload", "store": redact_url(url), "key": key, "reason": "vanished"}
    _LOG.warning("pulsar-offload: %s vanished while the read was planned; left out, as failOnDataLoss=false", key,
                 extra={"context": context})  # fmt: skip


def entry_span(first: int, last: int | None) -> str:
    """Entries ``first`` to ``last`` (inclusive; ``None``: open-ended), for people."""
    return f"{first} to the object's end" if last is None else f"{first} to {last}"


def skipped_objects(spark: Any) -> Any:
    """The objects ``failOnDataLoss=false`` reads of this session skipped,
    a DataFrame of one row per skip (a retried task's skips count again):
    ``ts`` (timestamp), ``source`` (``kafka-remote`` or ``pulsar-offload``),
    ``store`` (the URL without secrets), ``key``, ``topic``, ``partition``
    (int), ``first_offset`` and ``last_offset`` (bigint, inclusive; null
    for ``pulsar-offload``), ``reason`` (``vanished``: deleted between
    planning and reading), ``ledger_id``, ``first_entry`` and
    ``last_entry`` (bigint, the entries skipped, inclusive; null for
    ``kafka-remote``, and ``last_entry`` null for a skip to the ledger's
    end) and ``message``. Batch reads only (see
    the module's docstring).

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
    return logs.where(sf.col("logger") == LOGGER).select(
        "ts",
        *(sf.col("context").getItem(name).cast(kind).alias(name) for name, kind in _COLUMNS),
        sf.col("msg").alias("message"),
    )
