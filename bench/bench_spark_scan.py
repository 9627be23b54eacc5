"""Spark scan benchmark: the pulsar-offload source with 2 executor slots vs 1,
and vs a single-process read of the same ledgers. Ratios from one run.

The store is a local directory of PIP-17 ledgers; each scan sums the payload
lengths, so every entry is read and decoded. Run: ``make bench-all``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers


def timed(action: Callable[[], object], repeat: int) -> tuple[float, object]:
    samples, value = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        value = action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), value


def make_store(root: str, ledgers: int, entries: int, block: int) -> tuple[str, int]:
    url = f"file://{root}/bucket"
    offloader = open_offloader(url, max_block_size=block, fsync=False)
    rng = random.Random(17)
    total = 0
    for ledger_id in range(1, ledgers + 1):
        payloads = [rng.randbytes(rng.randrange(100, 4000)) for _ in range(entries)]
        total += sum(map(len, payloads))
        offloader.offload(InMemoryReadHandle(ledger_id, payloads), uuid.uuid4())
    return url, total


def single_process(url: str) -> int:
    offloader = open_offloader(url)
    total = 0
    for ledger in find_offloaded_ledgers(open_driver(url)):
        handle = offloader.read_offloaded(ledger.ledger_id, ledger.uuid)
        for first in range(0, handle.last_entry_id + 1, 1000):
            last = min(first + 999, handle.last_entry_id)
            total += sum(len(entry.data) for entry in handle.read(first, last))
        handle.close()
    return total


def spark_scan(master: str, url: str, repeat: int, options: dict[str, str]) -> tuple[float, int]:
    from pyspark.sql import SparkSession

    from offload_core.spark import PulsarOffloadDataSource

    session = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(PulsarOffloadDataSource)
    frame = session.read.format("pulsar-offload").options(**options).load(url)

    def scan() -> int:
        return int(frame.selectExpr("sum(length(payload)) AS n").collect()[0].n)

    scan()  # start the Python workers before timing
    elapsed, total = timed(scan, repeat)
    session.stop()
    return elapsed, int(total)  # type: ignore[call-overload]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=int, default=16)
    parser.add_argument("--entries", type=int, default=4000)
    parser.add_argument("--block", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with tempfile.TemporaryDirectory() as root:
        url, total = make_store(root, args.ledgers, args.entries, args.block)
        mb = total / 1e6
        print(f"{args.ledgers} ledgers x {args.entries} entries, {mb:.0f} MB of payload, blocks of {args.block} B")
        single, counted = timed(lambda: single_process(url), args.repeat)
        assert counted == total
        raw = {"decode": "none", "blocksPerPartition": "4"}
        results = {
            "single process (read_offloaded)": single,
            "spark local[1], decode=none": spark_scan("local[1]", url, args.repeat, raw)[0],
            "spark local[2], decode=none": spark_scan("local[2]", url, args.repeat, raw)[0],
            "spark local[2], decode=none, arrow=false": spark_scan(
                "local[2]", url, args.repeat, {**raw, "arrow": "false"}
            )[0],
            "spark local[2], decode=auto": spark_scan("local[2]", url, args.repeat, {"blocksPerPartition": "4"})[0],
        }
        for name, seconds in results.items():
            print(f"  {name:<42} {seconds:6.2f} s  {mb / seconds:7.1f} MB/s")
        one, two = results["spark local[1], decode=none"], results["spark local[2], decode=none"]
        print(f"  2 executor slots vs 1 (speed-up):            {one / two:.2f}")
        print(f"  spark local[2] vs single process (speed-up):  {single / two:.2f}")
        print(f"  spark local[1] vs single process (speed-up):  {single / one:.2f}")


if __name__ == "__main__":
    main()
