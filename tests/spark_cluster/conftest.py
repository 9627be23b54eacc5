"""A real standalone cluster (a master and two one-core workers) and a
session on it, started once for this package; the local ``spark`` session
of tests/spark is stopped by then (one SparkContext per process)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.spark_cluster.processes import StandaloneCluster


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    started = StandaloneCluster.start(tmp_path_factory.mktemp("standalone"))
    yield started
    started.stop()


@pytest.fixture(scope="package")
def cluster_spark(cluster: StandaloneCluster) -> Iterator[Any]:
    """offload_core.spark.get_session on the cluster, from a driver whose
    environment names no Python for the workers: get_session must choose."""
    from pyspark.sql import SparkSession

    from offload_core.spark import get_session

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    saved = {name: os.environ.pop(name, None) for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_LOCAL_IP")}
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    config = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.executor.memory": "512m",
        "spark.sql.shuffle.partitions": "2",
        # The first job waits for both executors, so every test uses both workers.
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        # A bad-input test fails on the first attempt instead of four.
        "spark.task.maxFailures": "1",
    }
    if os.environ.get("PYTHONPATH"):
        # The executors import the code under test from where the driver does.
        config["spark.executorEnv.PYTHONPATH"] = os.environ["PYTHONPATH"]
    session = get_session(cluster.url, "offload-core-cluster-tests", config)
    yield session
    session.stop()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
