"""``make bench``'s Spark scenario: the ``pulsar-offload`` scan against
Spark's own Parquet scan of the same payloads, and against the floor of
PySpark's Python data source API, in one session (see bench_table.py)."""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import time
import uuid
from dataclasses import dataclass
from typing import Any

from offload_driver_filesystem import FilesystemDriver

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle


@dataclass(frozen=True)
class Shape:
    """One scan's data: ``ledgers`` x ``entries`` payloads of
    ``smallest``-``largest`` bytes in blocks of ``block_size``."""

    ledgers: int
    entries: int
    smallest: int
    largest: int
    block_size: int


def spark(root: str, args: argparse.Namespace) -> dict[str, float]:
    """Two shapes, one session each: the default (payloads of 100-2,000 B in
    4 MiB blocks), and issue 42's 2 KB one (16 ledgers x 4,000 payloads of
    100-4,000 B in 1 MiB blocks), where per-block work weighs most."""
    shapes = {
        "": Shape(args.spark_ledgers, args.entries, 100, 2000, 4 * 2**20),
        ", 2 KB payloads": Shape(16, 4000, 100, 4000, 2**20),
    }
    results: dict[str, float] = {}
    for number, (suffix, shape) in enumerate(shapes.items()):
        results.update(spark_shape(f"{root}/spark{number}", args, suffix, shape))
    return results


def spark_shape(root: str, args: argparse.Namespace, suffix: str, shape: Shape) -> dict[str, float]:
    """The source's scan against Spark's own Parquet scan of the same
    payloads, ``sum(length(payload))``, local[2], one session."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from offload_core.spark import get_session
    except ImportError:
        return {}
    rng = random.Random(11)
    url = f"file://{root}/spark-bucket"
    offloader = BlobStoreLedgerOffloader(FilesystemDriver(f"{root}/spark-bucket", fsync=False),
                                         max_block_size=shape.block_size)  # fmt: skip
    parquet_dir = f"{root}/parquet"
    os.makedirs(parquet_dir)
    for ledger_id in range(1, shape.ledgers + 1):
        payloads = [rng.randbytes(rng.randrange(shape.smallest, shape.largest)) for _ in range(shape.entries)]
        offloader.offload(InMemoryReadHandle(ledger_id, payloads), uuid.uuid4())
        table = pa.table({"ledger_id": [ledger_id] * len(payloads), "entry_id": list(range(len(payloads))),
                          "payload": pa.array(payloads, pa.binary())})  # fmt: skip
        pq.write_table(table, f"{parquet_dir}/ledger-{ledger_id}.parquet")
    session = get_session("local[2]")
    register_ready_made_source(session, shape)
    try:
        ours = session.read.format("pulsar-offload").option("decode", "none").load(url)
        theirs = session.read.parquet(parquet_dir)

        def total(frame: Any) -> int:
            return int(frame.selectExpr("sum(length(payload)) AS n").collect()[0].n)

        floor = session.read.format("ready-made").load()
        assert total(ours) == total(theirs)  # also starts the Python workers before timing
        assert total(floor) > 0
        # Warmed twice each, then alternated, medians: the JVM and the
        # Python workers keep warming up over the first scans, and timing
        # one scan's runs all first would hand it the cold ones.
        scans = {"ours": ours, "theirs": theirs, "floor": floor}
        for frame in [*scans.values(), *scans.values()]:
            total(frame)
        samples: dict[str, list[float]] = {name: [] for name in scans}
        for _ in range(args.repeat):
            for name, frame in scans.items():
                started = time.perf_counter()
                total(frame)
                samples[name].append(time.perf_counter() - started)
        ours_time, theirs_time, floor_time = (statistics.median(samples[name]) for name in scans)
    finally:
        session.stop()
    return {
        f"pulsar-offload Spark scan / Spark's Parquet scan (throughput){suffix}": theirs_time / ours_time,
        f"the API's floor: a Python source reading nothing / Parquet scan{suffix}": theirs_time / floor_time,
    }


def register_ready_made_source(session: Any, shape: Shape) -> None:
    """A Python data source that reads nothing: each of ``shape.ledgers`` tasks
    yields ready-made Arrow batches of ``pulsar-offload``'s schema (10,000
    rows each, its default; payloads of the shape's sizes from one buffer, as a
    block's are), so its scan costs only what PySpark's Python data source
    machinery does. ``pulsar-offload`` cannot be faster than this on the
    same session."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
    from pyspark.sql.pandas.types import to_arrow_schema

    from offload_core.spark.source import SCHEMA

    class ReadyMadeReader(DataSourceReader):
        def partitions(self) -> list[InputPartition]:
            return [InputPartition(ledger_id) for ledger_id in range(1, shape.ledgers + 1)]

        def read(self, partition: InputPartition) -> Any:
            import pyarrow as pa

            schema = to_arrow_schema(SCHEMA, timezone="UTC")
            rng = random.Random(partition.value)
            sizes = [rng.randrange(shape.smallest, shape.largest) for _ in range(10_000)]
            offsets = pa.array([0, *itertools.accumulate(sizes)], pa.int32()).buffers()[1]
            data = pa.py_buffer(bytes(sum(sizes)))  # made once: the scan is what is measured
            for first in range(0, shape.entries, 10_000):
                count = min(10_000, shape.entries - first)
                columns = [pa.nulls(count, field.type) for field in schema]
                columns[0] = pa.array([partition.value] * count, pa.int64())
                columns[1] = pa.array(range(first, first + count), pa.int64())
                columns[3] = pa.BinaryArray.from_buffers(pa.binary(), count, [None, offsets, data])
                yield pa.RecordBatch.from_arrays(columns, schema=schema)

    class ReadyMadeSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "ready-made"

        def schema(self) -> Any:
            return SCHEMA

        def reader(self, schema: Any) -> Any:
            return ReadyMadeReader()

    session.dataSource.register(ReadyMadeSource)
