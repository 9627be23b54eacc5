"""Offloaded topics as Iceberg tables (the core's ``iceberg`` extra, ``pip install -e '.[iceberg]'`` in a clone):
an incremental, exactly-once export of a Pulsar topic's offloaded ledgers
and segments, or a Kafka topic's tiered segments, through the
``pulsar-offload`` and ``kafka-remote`` sources.

Spark's tasks write the Parquet data files into the table's warehouse
(:mod:`.data_files`); the driver commits them in one snapshot whose summary
records how far each topic partition got (:mod:`.watermarks`; for Kafka,
in which incarnation of the topic: :mod:`.kafka_plan`), so a re-run
exports only what was tiered since; a failed run's files are removed
(:mod:`.runs`). The catalog is pyiceberg's: by default a SQL catalog on
SQLite under the data directory (:mod:`.tables`).

Imports: pyiceberg, pyarrow, PySpark, and offload-core's ``spark`` sources,
``managed_ledger`` metadata records and ``urls``; nothing imports this
package but the ``offload spark export`` verbs."""

from .jobs import DEFAULT_STALE_AFTER, ExportResult, export_kafka, export_pulsar
from .tables import KAFKA, PULSAR, default_catalog_properties

__all__ = [
    "DEFAULT_STALE_AFTER",
    "KAFKA",
    "PULSAR",
    "ExportResult",
    "default_catalog_properties",
    "export_kafka",
    "export_pulsar",
]
