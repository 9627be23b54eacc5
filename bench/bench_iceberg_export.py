"""The Iceberg export (issue 44), in one Spark session (local[2]):

- the export of a tiered Kafka topic against a plain Spark Parquet write of
  the same rows read through ``kafka-remote`` (throughput);
- a Spark aggregate over the exported table's data files against the same
  query through ``kafka-remote`` (speed-up).

Warmed once each, then alternated, medians of ``--repeat``. Ratios from one
run; nothing asserts on time. Run: ``.venv/bin/python bench/bench_iceberg_export.py``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark import get_session
from offload_core.spark.export import default_catalog_properties, export_kafka

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.rsm.segments import numbered_segments, write_partition  # noqa: E402

QUERY = (
    "SELECT partition, count(*) AS n, sum(length(value)) AS bytes FROM records GROUP BY partition ORDER BY partition"
)


def tier(root: Path, partitions: int, segments: int, batches: int) -> str:
    """Topic ``bench``: ``partitions`` partitions of ``segments`` tiered
    segments of ``batches`` batches of 10 records of 300 B."""
    url = f"file://{root / 'store'}"
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    for partition in range(partitions):
        specs = numbered_segments(segments + 1, batches=batches, records=10, step_ts=60_000)
        tp, found = read_partition_dir(write_partition(root / "kafka", f"bench-{partition}", specs))
        for segment in found[:segments]:
            rsm.copy_log_segment(tp, segment.data)
    return url


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--segments", type=int, default=4, help="tiered segments per partition")
    parser.add_argument("--batches", type=int, default=500, help="batches of 10 records per segment")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        url = tier(root, args.partitions, args.segments, args.batches)
        rows = args.partitions * args.segments * args.batches * 10
        spark = get_session("local[2]")
        source = spark.read.format("kafka-remote").options(url=url, topic="bench", prefix="tiered").load()
        catalog = default_catalog_properties(root / "data")
        runs = iter(range(10_000))

        def export() -> Any:
            return export_kafka(spark, url, "bench", f"bench.t{next(runs)}", options={"prefix": "tiered"},
                                catalog=catalog)  # fmt: skip

        def plain_write() -> None:
            source.write.mode("overwrite").parquet(str(root / "plain"))

        last = export()
        assert last.rows_added == rows
        plain_write()
        export_times, write_times = [], []
        for _ in range(args.repeat):
            export_times.append(timed(export))
            write_times.append(timed(plain_write))
        from pyiceberg.catalog import load_catalog

        table = load_catalog("offload", **catalog).load_table(last.table)
        files = [task.file.file_path for task in table.scan().plan_files()]
        exported = spark.read.parquet(*files)
        answers = {}
        for name, frame in (("table", exported), ("source", source)):
            frame.createOrReplaceTempView("records")
            answers[name] = spark.sql(QUERY).collect()
        assert answers["table"] == answers["source"]
        query_times: dict[str, list[float]] = {"table": [], "source": []}
        for _ in range(args.repeat):
            for name, frame in (("table", exported), ("source", source)):
                frame.createOrReplaceTempView("records")
                query_times[name].append(timed(lambda: spark.sql(QUERY).collect()))
        spark.stop()
    export_time, write_time = statistics.median(export_times), statistics.median(write_times)
    table_time, source_time = statistics.median(query_times["table"]), statistics.median(query_times["source"])
    print(f"rows: {rows}, data files per export: {last.data_files}")
    print(f"export, rows/s: {rows / export_time:,.0f}; plain Spark Parquet write: {rows / write_time:,.0f}")
    print(f"export / plain Parquet write (throughput): {write_time / export_time:.2f}")
    print(f"aggregate over the exported table / through kafka-remote (speed-up): {source_time / table_time:.2f}")


if __name__ == "__main__":
    main()
