"""The Spark session the jobs and the ``offload spark`` verbs run on."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["choose_master", "get_session"]


def choose_master(requested: str | None, configured: str | None) -> str:
    """The master a new session runs on: the one asked for, else the one
    Spark's configuration names, else ``local[*]``."""
    return requested or configured or "local[*]"


def get_session(master: str | None = None, app_name: str = "offload-core") -> Any:
    """The running session, else a new one on ``master``, else on the master
    Spark's configuration names (``PYSPARK_SUBMIT_ARGS``,
    ``spark-defaults.conf``), else ``local[*]``; a new session has the
    ``pulsar-offload`` and ``kafka-remote`` sources registered.

    A local session binds to 127.0.0.1 and runs Python workers on this
    interpreter, the one with offload-core installed."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from .source import KafkaRemoteDataSource, PulsarOffloadDataSource

    active = SparkSession.getActiveSession()
    if active is None:
        # Start the JVM first, so the conf holds what spark-submit,
        # PYSPARK_SUBMIT_ARGS and spark-defaults.conf set (the master among them).
        SparkContext._ensure_initialized()
        conf = SparkConf()
        conf.setMaster(choose_master(master, conf.get("spark.master")))
        if (conf.get("spark.master") or "").startswith("local"):
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            conf.setIfMissing("spark.driver.bindAddress", "127.0.0.1")
            conf.setIfMissing("spark.driver.host", "127.0.0.1")
            conf.setIfMissing("spark.ui.enabled", "false")
        # The verbs print their own progress; Spark's bar (which PySpark's
        # launcher turns on) would garble it.
        conf.set("spark.ui.showConsoleProgress", "false")
        # Lets pulsar-offload's filterPushdown option prune by ledger and entry id.
        conf.setIfMissing("spark.sql.python.filterPushdown.enabled", "true")
        active = SparkSession.builder.appName(app_name).config(conf=conf).getOrCreate()
        active.dataSource.register(PulsarOffloadDataSource)
        active.dataSource.register(KafkaRemoteDataSource)
    return active
