"""Both sources on a real standalone cluster: executors are other
processes, started by the workers with nothing of the driver's but what
Spark ships (the tasks, their options, spark.executorEnv)."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.session
import pytest

import offload_core
from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark import kafka_remote
from tests.emulators import MotoS3
from tests.rsm.segments import numbered_segments, write_partition

pytestmark = [pytest.mark.spark, pytest.mark.emulator]


def executor_facts(_: Iterator[int]) -> Iterator[tuple[Any, ...]]:
    """What a task sees where it runs (defined here, shipped by value)."""
    import os
    import sys

    import botocore.session

    import offload_core
    from offload_core.plugins import default_plugin_manager

    yield (
        os.getcwd(),
        sys.executable,
        offload_core.__file__,
        sorted(name for name in os.environ if name.startswith("AWS_")),
        botocore.session.get_session().get_credentials() is None,
        [spec.name for spec in default_plugin_manager().drivers()],
    )


def test_executors_run_the_projects_python_find_its_plugins_and_hold_no_credentials(cluster_spark: Any) -> None:
    facts = cluster_spark.sparkContext.parallelize(range(4), 4).mapPartitions(executor_facts).collect()
    workers = {Path(cwd).relative_to(Path(cwd).parents[2]).parts[0] for cwd, *_ in facts}
    assert workers == {"worker-0", "worker-1"}, facts
    assert {(python, module) for _, python, module, *_ in facts} == {(sys.executable, offload_core.__file__)}
    assert all(variables == [] and no_credentials for _, _, _, variables, no_credentials, _ in facts), facts
    assert all({"s3", "filesystem"} <= set(drivers) for *_, drivers in facts), facts
    # Nor has the driver any: what reaches a store comes from the options alone.
    assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} & set(os.environ)
    assert botocore.session.get_session().get_credentials() is None


def pulsar_store(url: str, options: dict[str, Any]) -> dict[int, list[bytes]]:
    offloader = open_offloader(url, **options, max_block_size=5 * 2**20)
    ledgers = {lid: [f"{lid}:{n}".encode() * (n % 7 + 1) for n in range(300)] for lid in (3, 4)}
    for ledger_id, entries in ledgers.items():
        offloader.offload(InMemoryReadHandle(ledger_id, entries), uuid.uuid4())
    return ledgers


def kafka_store(root: Path, url: str, options: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Two partitions of topic orders tiered to ``url``; the rows the source
    reads from them, read in this process without Spark."""
    rsm = RemoteStorageManager(open_driver(url, **options), prefix="tiered")
    for name, count in (("orders-0", 3), ("orders-1", 2)):
        tp, segments = read_partition_dir(write_partition(root, name, numbered_segments(count)))
        for segment in segments:
            rsm.copy_log_segment(tp, segment.data)
    read_options = {"url": url, "prefix": "tiered", "topic": "orders"}
    read_options |= {f"driver.{name}": str(value) for name, value in options.items()}
    planned = kafka_remote.plan_partitions(read_options)
    store = kafka_remote.make_reader(read_options).store
    return sorted(row[:7] for partition in planned for row in kafka_remote.read_partition(store, partition))


@pytest.mark.parametrize("where", ["filesystem", "s3"])
def test_both_sources_read_every_record_on_the_cluster(
    cluster_spark: Any, s3: MotoS3, tmp_path: Path, where: str
) -> None:
    options: dict[str, Any] = s3.client_options() if where == "s3" else {}
    base = "s3://offload-test" if where == "s3" else f"file://{tmp_path / 'store'}"
    ledgers = pulsar_store(f"{base}/pulsar", options)
    kafka_rows = kafka_store(tmp_path, f"{base}/kafka", options)
    assert len(kafka_rows) == 500

    driver_options = {f"driver.{name}": str(value) for name, value in options.items()}
    pulsar = (cluster_spark.read.format("pulsar-offload").options(**driver_options).option("decode", "none")
              .option("blocksPerPartition", "1").load(f"{base}/pulsar"))  # fmt: skip
    rows = sorted((row.ledger_id, row.entry_id, bytes(row.payload)) for row in pulsar.collect())
    assert rows == [(lid, n, entry) for lid, entries in sorted(ledgers.items()) for n, entry in enumerate(entries)]

    kafka = (cluster_spark.read.format("kafka-remote").options(**driver_options).option("prefix", "tiered")
             .option("topic", "orders").load(f"{base}/kafka"))  # fmt: skip
    read = sorted((bytes(r.key) if r.key is not None else None, bytes(r.value), r.topic, r.partition, r.offset,
                   r.timestamp, r.timestampType) for r in kafka.collect())  # fmt: skip
    assert [row[:5] + row[6:] for row in read] == [
        (key, value, topic, partition, offset, kind) for key, value, topic, partition, offset, _, kind in kafka_rows
    ]
    assert kafka.rdd.getNumPartitions() > 1
