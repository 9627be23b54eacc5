"""A local Spark session: local[2], UI off, bound to 127.0.0.1; one for this
package, stopped when it ends (tests/spark_cluster starts its own: a process
holds one SparkContext at a time)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="package")
def spark() -> Iterator[Any]:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        pytest.fail("pyspark is not installed: run `make test` (it installs offload-core[spark])")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers must run this interpreter (the one with offload-core installed).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("offload-core-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    from offload_core.spark import register_sources

    register_sources(session)
    yield session
    session.stop()


@pytest.fixture
def collecting(spark: Any) -> Iterator[Any]:
    """The package's session, collecting its Python workers' logs (as get_session's does) for one test."""
    from offload_core.spark.data_loss import CAPTURE_CONF

    spark.conf.set(CAPTURE_CONF, "true")
    yield spark
    spark.conf.unset(CAPTURE_CONF)
