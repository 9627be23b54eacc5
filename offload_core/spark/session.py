"""The Spark session the jobs and the ``offload spark`` verbs run on."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, TypeVar

from ..errors import ConfigError

__all__ = ["choose_master", "choose_python", "classic_context", "get_session", "register_sources"]

T = TypeVar("T")
# Marks a session register_sources registered the sources with.
_REGISTERED = "_offload_core_sources"


def choose_master(requested: str | None, configured: str | None) -> str:
    """The master a new session runs on: the one asked for, else the one
    Spark's configuration names, else ``local[*]``."""
    return requested or configured or "local[*]"


def choose_python(configured: str | None, environment: str | None, running: str) -> str:
    """The interpreter every Python worker runs (the driver's planning
    workers and every executor's): ``spark.pyspark.python``, else
    ``PYSPARK_PYTHON``, else ``running`` (this one, with offload-core
    installed), never ``python3`` from each host's ``PATH``."""
    return configured or environment or running


def get_session(
    master: str | None = None, app_name: str = "offload-core", config: Mapping[str, str] | None = None
) -> Any:
    """The running session, else a new one on ``master``, else on the master
    Spark's configuration names (``PYSPARK_SUBMIT_ARGS``,
    ``spark-defaults.conf``), else ``local[*]``, with ``config`` set on
    it; a new session has the ``pulsar-offload`` and ``kafka-remote``
    sources registered, and its Python workers' logs collected
    (``spark.sql.pyspark.worker.logging.enabled``, unless ``config`` or
    Spark's configuration says otherwise), so
    :func:`~offload_core.spark.skipped_objects` can count what
    ``failOnDataLoss=false`` skipped.

    Every Python worker of a new session, on the driver and on every
    executor, runs :func:`choose_python`'s interpreter: PySpark's RDD
    workers (data sources' included) take ``PYSPARK_PYTHON`` from this
    process (set here) and ``spark-submit`` takes ``spark.pyspark.python``
    (a session builder's setting of it is not read), so both are set to the same path. On
    a cluster, that path must hold offload-core on every worker host. A
    local session also binds to 127.0.0.1.

    With ``SPARK_REMOTE`` set (or ``spark.remote`` in ``config``) and no
    session running, the new session is a Spark Connect client of that
    server, with the sources registered (without the skip accumulator:
    Connect has none); the server's own configuration decides its master,
    its workers' Python and whether their logs are collected.
    :class:`ConfigError` if ``master`` is given too."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from .data_loss import CAPTURE_CONF

    active = SparkSession.getActiveSession()
    remote = (config or {}).get("spark.remote") or os.environ.get("SPARK_REMOTE")
    if active is None and remote:
        return _connect_session(remote, master, app_name, config or {})
    if active is None:
        # Start the JVM first, so the conf holds what spark-submit,
        # PYSPARK_SUBMIT_ARGS and spark-defaults.conf set (the master among them).
        SparkContext._ensure_initialized()
        conf = SparkConf()
        conf.setAll(list((config or {}).items()))
        conf.setMaster(choose_master(master, conf.get("spark.master")))
        python = choose_python(conf.get("spark.pyspark.python"), os.environ.get("PYSPARK_PYTHON"), sys.executable)
        conf.set("spark.pyspark.python", python)
        os.environ["PYSPARK_PYTHON"] = python
        if (conf.get("spark.master") or "").startswith("local"):
            conf.setIfMissing("spark.driver.bindAddress", "127.0.0.1")
            conf.setIfMissing("spark.driver.host", "127.0.0.1")
            conf.setIfMissing("spark.ui.enabled", "false")
        # The verbs print their own progress; Spark's bar (which PySpark's
        # launcher turns on) would garble it.
        conf.set("spark.ui.showConsoleProgress", "false")
        # Lets pulsar-offload's filterPushdown option prune by ledger and entry id.
        conf.setIfMissing("spark.sql.python.filterPushdown.enabled", "true")
        # Brings the workers' logs to the driver: skipped_objects counts what failOnDataLoss=false skipped.
        conf.setIfMissing(CAPTURE_CONF, "true")
        active = SparkSession.builder.appName(app_name).config(conf=conf).getOrCreate()
        register_sources(active)
    return active


def _connect_session(remote: str, master: str | None, app_name: str, config: Mapping[str, str]) -> Any:
    """A Spark Connect client session on ``remote``, with the sources
    registered: the server holds the master and its workers' Python, so
    neither is set here. :class:`ConfigError` when a master is asked for
    too."""
    from pyspark.sql import SparkSession

    if master is not None:
        # The remote is not named: a Connect URL may hold a token.
        raise ConfigError(f"a master ({master!r}) and a Spark Connect server (SPARK_REMOTE or spark.remote) were "
                          "both given: the server runs its own master; give one of them")  # fmt: skip
    builder = SparkSession.builder.remote(remote).appName(app_name)
    for name, value in config.items():
        if name != "spark.remote":
            builder = builder.config(name, value)
    active = builder.getOrCreate()
    register_sources(active)
    return active


def classic_context(spark: Any, job: str) -> Any:
    """``spark``'s SparkContext, which ``job`` runs its RDDs on.
    :class:`ConfigError` for a Spark Connect session, which has none."""
    context = getattr(spark, "_sc", None)  # a Connect session has no SparkContext
    if context is None:
        raise ConfigError(f"{job} runs Spark tasks on RDDs, which Spark Connect does not offer: run it on a classic "
                          "session (get_session() with SPARK_REMOTE unset, or spark-submit)")  # fmt: skip
    return context


def register_sources(spark: Any) -> None:
    """Register the ``pulsar-offload`` and ``kafka-remote`` sources with
    ``spark`` carrying the application's skip accumulator, so
    :func:`~offload_core.spark.skipped_objects` counts what their read
    tasks skip, in batch and ``readStream`` reads alike (a Spark Connect
    session has no accumulators: there they are registered without one).
    They replace the sources PySpark finds installed (which carry none;
    Spark logs a warning for each replacement), once a session: a second
    call on the same session does nothing."""
    from .data_loss import skip_accumulator
    from .source import KafkaRemoteDataSource, PulsarOffloadDataSource

    if getattr(spark, _REGISTERED, False):
        return
    skips = skip_accumulator(spark)
    for source in (PulsarOffloadDataSource, KafkaRemoteDataSource):
        spark.dataSource.register(source if skips is None else _counting_skips(source, skips))
    setattr(spark, _REGISTERED, True)


def _counting_skips(source: type[T], skips: Any) -> type[T]:
    """``source`` carrying the accumulator ``skips``: a subclass made here
    travels to Spark's workers by value, its class attributes with it."""
    return type(
        source.__name__, (source,), {"skips": skips, "__module__": source.__module__, "__doc__": source.__doc__}
    )
