"""The ``pulsar-offload`` data source class, as Spark ships it to its Python
workers.

Spark 4 unpickles a Python data source inside worker processes (to create
it, plan it and read it), started with ``PYSPARK_PYTHON`` (which
``spark-submit`` sets from ``spark.pyspark.python``), else ``python3``
from ``PATH``. This module is registered with PySpark's cloudpickle to
travel *by value*, and imports nothing but PySpark at module level, so a
worker running the wrong
interpreter reaches :meth:`PulsarOffloadDataSource.schema` and fails there
with an error that names that interpreter and the fix, instead of a bare
``ModuleNotFoundError`` deep in Spark's unpickler. The jobs' tasks travel
inside :func:`guarded_partition` for the same reason.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = [
    "KAFKA_SCHEMA",
    "SCHEMA",
    "UNUSABLE_WORKER",
    "KafkaRemoteDataSource",
    "PulsarOffloadDataSource",
    "SkipRecords",
    "WorkerEnvironmentError",
    "guarded_partition",
]

SCHEMA = StructType(
    [
        StructField("ledger_id", LongType(), nullable=False),
        StructField("entry_id", LongType(), nullable=False),
        StructField("batch_index", IntegerType()),
        StructField("payload", BinaryType()),
        StructField("publish_time", TimestampType()),
        StructField("event_time", TimestampType()),
        StructField("key", StringType()),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("producer_name", StringType()),
        StructField("sequence_id", LongType()),
    ]
)


#: Exactly the schema of Spark's own Kafka source with ``includeHeaders=true``.
KAFKA_SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
        StructField(
            "headers",
            ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
        ),
    ]
)


class WorkerEnvironmentError(RuntimeError):
    """A Spark Python worker runs an interpreter that cannot import
    offload-core (or what it needs)."""


def _reader_module(name: str = "pulsar_offload") -> Any:
    """offload-core's reading side, imported in the worker; raises
    :class:`WorkerEnvironmentError` naming the interpreter when it cannot be."""
    try:
        module = importlib.import_module(f"offload_core.spark.{name}")
    except ImportError as exc:
        raise WorkerEnvironmentError(
            f"this Spark worker runs {sys.executable} (Python {sys.version.split()[0]}), which cannot import "
            f"offload-core: {exc}. Spark starts Python workers with PYSPARK_PYTHON (spark-submit sets it from "
            "spark.pyspark.python), else python3 from PATH: set it to the interpreter offload-core is installed "
            "in (for example PYSPARK_PYTHON=/path/to/project/.venv/bin/python), or build the session with "
            "offload_core.spark.get_session(), which does"
        ) from None
    return module


class SkipRecords:
    """The accumulator parameter of the skips a read's tasks record (see
    :mod:`offload_core.spark.data_loss`): a list of each skip's fields (the
    log record's ``context``, with its ``ts`` in epoch seconds and its
    ``message``), tasks' lists joined. Here, as the sources carry it, so
    that it travels by value: a worker that cannot import offload-core
    still unpickles them and says so with :class:`WorkerEnvironmentError`."""

    def zero(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return []

    def addInPlace(self, value1: list[dict[str, Any]], value2: list[dict[str, Any]]) -> list[dict[str, Any]]:  # noqa: N802 - PySpark's name
        value1 += value2
        return value1


#: Tags the one result of a job's task whose worker cannot import offload-core.
UNUSABLE_WORKER = "offload-core cannot be imported here"


def guarded_partition(task: bytes, items: Iterator[Any]) -> Iterator[Any]:
    """A job's task (``task``: its partition function, pickled), as Spark
    runs it: loaded only once this worker has shown it can import
    offload-core; if it cannot, the task's one result is
    ``(UNUSABLE_WORKER, what to fix)``, for the driver to raise."""
    try:
        _reader_module("store_tasks")
    except WorkerEnvironmentError as exc:
        yield (UNUSABLE_WORKER, str(exc))
        return
    from pyspark import cloudpickle

    yield from cloudpickle.loads(task)(items)


class PulsarOffloadDataSource(DataSource):
    """Registered as ``pulsar-offload``: ``spark.dataSource.register(PulsarOffloadDataSource)``,
    or with :func:`~offload_core.spark.register_sources`, which registers
    it carrying the application's skip accumulator (:attr:`skips`)."""

    #: The accumulator its read tasks record skips on (see :mod:`~offload_core.spark.data_loss`).
    skips: ClassVar[Any] = None

    @classmethod
    def name(cls) -> str:
        return "pulsar-offload"

    def schema(self) -> StructType:
        _reader_module()  # the first call Spark makes in a worker: fail early, and clearly
        return SCHEMA

    def reader(self, schema: Any) -> Any:
        # ``schema`` is the user's (``.schema(...)``) when given: a subset of
        # the columns is column pruning, so only those are built.
        return _reader_module().make_reader(self.options, schema, self.skips)

    def streamReader(self, schema: Any) -> Any:
        return _reader_module("streaming_pulsar").make_stream_reader(self.options, schema, self.skips)


class KafkaRemoteDataSource(DataSource):
    """Registered as ``kafka-remote``: Kafka segments tiered by offload-core,
    read with the schema of Spark's own Kafka source (registered as
    :class:`PulsarOffloadDataSource` is)."""

    #: The accumulator its read tasks record skips on (see :mod:`~offload_core.spark.data_loss`).
    skips: ClassVar[Any] = None

    @classmethod
    def name(cls) -> str:
        return "kafka-remote"

    def schema(self) -> StructType:
        _reader_module("kafka_remote")
        if str(self.options.get("includeHeaders", "false")).lower() == "true":
            return KAFKA_SCHEMA
        return StructType(KAFKA_SCHEMA.fields[:-1])  # Spark's default: no headers column

    def reader(self, schema: Any) -> Any:
        return _reader_module("kafka_remote").make_reader(self.options, schema, self.skips)

    def streamReader(self, schema: Any) -> Any:
        return _reader_module("streaming_kafka").make_stream_reader(self.options, schema, self.skips)
