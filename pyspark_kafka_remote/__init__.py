"""Found by PySpark 4's data-source lookup (every top-level ``pyspark_*``
module exposing ``DefaultSource``), so ``spark.read.format("kafka-remote")``
works in a fresh session with no ``spark.dataSource.register`` call.

The lookup imports every such module in one worker, so this one must never
fail: without offload-core's Spark side importable, it exposes nothing and
the source is simply not registered automatically (register it by hand, as
the README shows, to get the error that names the interpreter)."""

from __future__ import annotations

try:
    from offload_core.spark.source import KafkaRemoteDataSource as DefaultSource
except ImportError:  # pragma: no cover - depends on the worker's interpreter
    pass
else:
    __all__ = ["DefaultSource"]
