"""PySpark integration (the core's ``spark`` extra, ``pip install -e ".[spark]"`` in a clone): the
``pulsar-offload`` and ``kafka-remote`` data sources and the backfill, verify and retention jobs.
The export to Iceberg tables is :mod:`offload_core.spark.export` (the ``iceberg`` extra),
not imported here: pyiceberg is not part of the ``spark`` extra."""

from pyspark import cloudpickle

from . import source
from .backfill_job import BackfillResult, backfill
from .data_loss import skipped_objects
from .progress import Progress
from .pulsar_offload import BlockRangePartition, plan_partitions
from .retention_job import RetentionResult, retention
from .session import get_session, register_sources
from .source import KafkaRemoteDataSource, PulsarOffloadDataSource, WorkerEnvironmentError
from .verify_job import VerifyResult, verify_store

# The data source travels to Spark's Python workers by value: a worker on
# the wrong interpreter then fails with WorkerEnvironmentError, naming it.
cloudpickle.register_pickle_by_value(source)  # type: ignore[no-untyped-call]

__all__ = [
    "BackfillResult",
    "BlockRangePartition",
    "KafkaRemoteDataSource",
    "Progress",
    "PulsarOffloadDataSource",
    "RetentionResult",
    "VerifyResult",
    "WorkerEnvironmentError",
    "backfill",
    "get_session",
    "plan_partitions",
    "register_sources",
    "retention",
    "skipped_objects",
    "verify_store",
]
