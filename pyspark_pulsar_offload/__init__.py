"""Found by PySpark 4's data-source lookup (every top-level ``pyspark_*``
module exposing ``DefaultSource``), so ``spark.read.format("pulsar-offload")``
works in a fresh session with no ``spark.dataSource.register`` call.

The lookup imports every such module in one worker, so this one must never
fail: where offload-core's Spark side cannot be imported, it exposes a
stand-in whose first use raises ``WorkerEnvironmentError`` naming the
worker's interpreter and the fix (see :mod:`pyspark_pulsar_offload.unavailable`)."""

from __future__ import annotations

try:
    from offload_core.spark import PulsarOffloadDataSource as DefaultSource
except ImportError as exc:  # the worker's interpreter cannot import offload-core
    # (the package, not offload_core.spark.source alone: a failed import of the
    # package leaves .source in sys.modules, and a second lookup would find it)
    from pyspark_pulsar_offload.unavailable import unavailable_source

    DefaultSource = unavailable_source("pulsar-offload", exc)  # type: ignore[misc]

__all__ = ["DefaultSource"]
