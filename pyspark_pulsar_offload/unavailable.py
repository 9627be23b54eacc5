"""The data source a ``pyspark_*`` module exposes when the worker's
interpreter sees it but cannot import offload-core (another Python, a
``PYTHONPATH`` pointing at a checkout, a dependency missing): without it
PySpark's lookup finds nothing and reports ``DATA_SOURCE_NOT_FOUND`` with
pages of Java; with it, the first call Spark makes says which interpreter
runs the worker and how to point Spark at the right one.

Imports nothing but PySpark and the standard library: it runs where
offload-core cannot be imported."""

from __future__ import annotations

import sys
from typing import Any

from pyspark.sql.datasource import DataSource

__all__ = ["WorkerEnvironmentError", "unavailable_source"]


class WorkerEnvironmentError(RuntimeError):
    """A Spark Python worker runs an interpreter that cannot import
    offload-core (the same name as :class:`offload_core.spark.WorkerEnvironmentError`,
    which this interpreter cannot import)."""


def unavailable_source(name: str, error: ImportError) -> type[DataSource]:
    """A data source named ``name`` whose every use raises
    :class:`WorkerEnvironmentError` naming this interpreter, ``error`` and the fix."""
    message = (
        f"this Spark worker runs {sys.executable} (Python {sys.version.split()[0]}), which cannot import "
        f"offload-core ({error}), so the {name!r} data source cannot run. Spark starts Python workers with "
        "PYSPARK_PYTHON (spark-submit sets it from spark.pyspark.python), else python3 from PATH: set it to the "
        "interpreter offload-core is installed in (for example PYSPARK_PYTHON=/path/to/project/.venv/bin/python), "
        "or build the session with offload_core.spark.get_session(), which does"
    )

    class Unavailable(DataSource):
        @classmethod
        def name(cls) -> str:
            return name

        def schema(self) -> Any:
            raise WorkerEnvironmentError(message)

        def reader(self, schema: Any) -> Any:
            raise WorkerEnvironmentError(message)

    return Unavailable
