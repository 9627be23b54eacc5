"""Both sources through Spark Connect: a server started with PySpark's own
``sbin/start-connect-server.sh``, a client session from
``SparkSession.builder.remote``. The server finds the sources itself (the
``pyspark_*`` modules offload-core installs), and its Python workers run the
project's interpreter. A package of its own: PySpark refuses a Connect
session while a classic one runs in the process, so tests/spark_cluster's
session is stopped by then."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, open_driver
from tests.spark_cluster.processes import ConnectServer
from tests.spark_cluster.test_cluster_sources import kafka_store

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    """A fresh Connect server, its Python workers on this interpreter."""
    from pyspark.sql import SparkSession

    classic = SparkSession.getActiveSession()
    if classic is not None:
        classic.stop()
    extra = {"PYSPARK_PYTHON": sys.executable}
    if os.environ.get("PYTHONPATH"):
        extra["PYTHONPATH"] = os.environ["PYTHONPATH"]  # the server imports the code under test
    server = ConnectServer.start(tmp_path_factory.mktemp("connect"), sys.executable, extra)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def connect(connect_server: ConnectServer) -> Iterator[Any]:
    """A client session on the Connect server; the process is left as it
    was (the client marks it as in Connect mode)."""
    from pyspark.sql import SparkSession

    saved = {name: os.environ.get(name) for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    try:
        session = SparkSession.builder.remote(connect_server.url).getOrCreate()
        yield session
        session.stop()
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def test_both_sources_read_through_a_connect_session(connect: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'pulsar'}"
    entries = [b"connect %d" % n * (n % 4 + 1) for n in range(120)]
    BlobStoreLedgerOffloader(open_driver(url)).offload(InMemoryReadHandle(9, entries), uuid.uuid4())
    pulsar = connect.read.format("pulsar-offload").option("decode", "none").load(url)
    assert sorted((row.entry_id, bytes(row.payload)) for row in pulsar.collect()) == list(enumerate(entries))
    assert pulsar.where("entry_id >= 100").count() == 20

    expected = kafka_store(tmp_path, f"file://{tmp_path / 'kafka'}", {})
    kafka = connect.read.format("kafka-remote").option("prefix", "tiered").option("topic", "orders")
    rows = kafka.load(f"file://{tmp_path / 'kafka'}").select("partition", "offset", "value").collect()
    assert sorted((row.partition, row.offset, bytes(row.value)) for row in rows) == sorted(
        (partition, offset, value) for _, value, _, partition, offset, _, _ in expected
    )


def test_a_client_may_register_the_source_itself(connect: Any, tmp_path: Path) -> None:
    from offload_core.spark import PulsarOffloadDataSource

    url = f"file://{tmp_path / 'pulsar'}"
    BlobStoreLedgerOffloader(open_driver(url)).offload(InMemoryReadHandle(3, [b"a", b"b"]), uuid.uuid4())
    connect.dataSource.register(PulsarOffloadDataSource)  # shipped to the server by value
    assert [bytes(row.payload) for row in connect.read.format("pulsar-offload").load(url).collect()] == [b"a", b"b"]


def test_register_sources_registers_them_through_a_connect_session(connect: Any, tmp_path: Path) -> None:
    from offload_core.spark import register_sources

    url = f"file://{tmp_path / 'pulsar'}"
    BlobStoreLedgerOffloader(open_driver(url)).offload(InMemoryReadHandle(4, [b"c", b"d"]), uuid.uuid4())
    register_sources(connect)  # no accumulators on Connect: the sources go without one
    register_sources(connect)  # once a session
    assert [bytes(row.payload) for row in connect.read.format("pulsar-offload").load(url).collect()] == [b"c", b"d"]


GET_SESSION_AND_READ = """
import sys
from offload_core.spark import get_session
spark = get_session()
rows = spark.read.format("pulsar-offload").option("decode", "none").load(sys.argv[1]).collect()
print(type(spark).__module__, sorted(bytes(row.payload) for row in rows))
"""


def test_get_session_with_spark_remote_set_is_a_connect_client(connect_server: ConnectServer, tmp_path: Path) -> None:
    """A process of its own: no session running, SPARK_REMOTE naming the server."""
    url = f"file://{tmp_path / 'pulsar'}"
    BlobStoreLedgerOffloader(open_driver(url)).offload(InMemoryReadHandle(6, [b"e", b"f"]), uuid.uuid4())
    env = {name: value for name, value in os.environ.items() if not name.startswith(("SPARK_", "PYSPARK_"))}
    env["SPARK_REMOTE"] = connect_server.url
    done = subprocess.run([sys.executable, "-c", GET_SESSION_AND_READ, url], env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[-2] == "pyspark.sql.connect.session [b'e', b'f']"


def test_the_bulk_jobs_refuse_a_connect_session_naming_the_fix(connect: Any, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from offload_core.errors import ConfigError
    from offload_core.spark import backfill, retention, verify_store

    url = f"file://{tmp_path / 'store'}"
    fix = "Spark Connect does not offer: run it on a classic session"
    with pytest.raises(ConfigError, match=f"backfill runs Spark tasks on RDDs, which {fix}"):
        backfill(connect, tmp_path / "data")
    with pytest.raises(ConfigError, match=f"verify runs Spark tasks on RDDs, which {fix}"):
        verify_store(connect, url)
    with pytest.raises(ConfigError, match=f"retention runs Spark tasks on RDDs, which {fix}"):
        retention(connect, url, cutoff=datetime.now(UTC))
    assert not (tmp_path / "data").exists()  # refused before anything was made
