"""Both Spark sources, and the jobs, read objects written through chunk
transforms by default (``driver.transforms`` is ``auto``, as on the
command line: the chain comes from each object); ``none`` reads the bytes
as stored."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, PluginManager
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark.kafka_remote import plan_partitions
from offload_core.spark.source import KAFKA_SCHEMA
from offload_core.spark.streaming_kafka import make_stream_reader
from tests.aiven_vectors import aiven_runs
from tests.rsm.aiven.stores import put_run
from tests.rsm.segments import numbered_segments, write_partition

pytestmark = pytest.mark.spark


def test_pulsar_offload_and_kafka_remote_read_transformed_objects(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'store'}"
    driver = PluginManager().open_driver(url, transforms="zstd,crc32c", transform_chunk_size=4096)
    entries = [b"entry %d " % n * 30 for n in range(3000)]
    BlobStoreLedgerOffloader(driver, max_block_size=16384).offload(InMemoryReadHandle(8, entries), uuid.UUID(int=8))
    rsm = RemoteStorageManager(driver, prefix="kafka")
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1)))
    rsm.copy_log_segment(tp, segment.data)

    rows = spark.read.format("pulsar-offload").option("decode", "none").load(url).orderBy("entry_id").collect()
    assert [bytes(r.payload) for r in rows] == entries
    records = (spark.read.format("kafka-remote").option("url", url).option("prefix", "kafka").option("topic", "orders")
               .load())  # fmt: skip
    assert sorted(r.offset for r in records.select("offset").collect()) == list(range(100))


def test_the_sources_and_jobs_take_one_transforms_default() -> None:
    from offload_core.spark.kafka_remote import parse_options
    from offload_core.spark.read_options import parse_read_options
    from offload_core.spark.store_tasks import Store

    assert dict(parse_read_options({"path": "memory://"}).driver_options) == {"transforms": "auto"}
    assert dict(parse_options({"url": "memory://", "topic": "t"}).driver_options) == {"transforms": "auto"}
    assert dict(Store.of("memory://").options) == {"transforms": "auto"}
    bare = parse_read_options({"path": "memory://", "driver.transforms": "none", "driver.region": "x"})
    assert dict(bare.driver_options) == {"region": "x"}
    chain = parse_options({"url": "memory://", "topic": "t", "driver.transforms": "zstd"})
    assert dict(chain.driver_options) == {"transforms": "zstd"}


def test_the_spark_verify_job_checks_every_chunk(spark: Any, tmp_path: Path) -> None:
    from offload_driver_filesystem import FilesystemDriver

    from offload_core.spark import verify_store

    url = f"file://{tmp_path / 'store'}"
    driver = PluginManager().open_driver(url, transforms="crc32c", transform_chunk_size=2048)
    BlobStoreLedgerOffloader(driver, max_block_size=8192).offload(
        InMemoryReadHandle(4, [b"entry %d " % n * 30 for n in range(1000)]), uuid.UUID(int=4)
    )
    assert verify_store(spark, url).defects.count() == 0
    inner = FilesystemDriver(str(tmp_path / "store"))
    (key,) = [i.key for i in inner.list("") if i.key.endswith("-ledger-4")]
    stored = bytearray(inner.read(key))
    stored[5000] ^= 1  # a payload byte: only the chunk's CRC can tell
    inner.write(key, [bytes(stored)], metadata=dict(inner.stat(key).metadata))
    defects = verify_store(spark, url).defects.collect()
    assert defects and "CRC-32C" in defects[0].problem


def test_kafka_remote_reads_an_aiven_layout_store_written_through_transforms(tmp_path: Path) -> None:
    """Planning lists below the transforms (stored sizes, no stat per
    object): an Aiven segment's ``.log`` and ``.indexes`` written through
    zstd are listed at other sizes than the manifest's, which the listing
    must not take for objects cut or replaced (``offload kafka read``,
    listing through the transforms, reads them)."""
    url = f"file://{tmp_path / 'store'}"
    put_run(PluginManager().open_driver(url, transforms="zstd,crc32c", transform_chunk_size=4096), aiven_runs()[0])
    options = {"url": url, "layout": "aiven", "topic": "oracle-a", "startingOffsets": "earliest"}
    reader = make_stream_reader(options, KAFKA_SCHEMA)
    start = reader.initialOffset()
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end["offsets"] == {"oracle-a": {"0": 52}}
    offset = KAFKA_SCHEMA.fieldNames().index("offset")
    assert sorted(row[offset] for p in reader.partitions(start, end) for row in reader.read(p)) == list(range(52))
    assert [len(p.ranges) for p in plan_partitions(options)] == [1]
