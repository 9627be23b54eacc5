"""The ratios against their physical limits, each measured side by side
in one run, in one table: ``make bench`` runs this (issues "read path at
the speed of the hardware", "cold reads at real object-store latency",
and streaming offload's).

Warm (filesystem store, page cache warm; 40,000 entries of 100-2,000 B,
4 MiB blocks, 1 MiB read buffer):

* sequential read through ``read_offloaded(...).read()`` vs a bare
  ``struct.unpack_from`` loop over the same data object in memory (entries/s);
* GETs per cold random entry read (fresh handle, index loaded);
* offload vs a raw driver write of the same bytes (throughput), and the
  same on a store answering as a remote one does (20 ms to first byte,
  200 MB/s per request).

Cold (the filesystem store behind ``SlowDriver``: 100 ms to first byte;
1 KiB entries):

* sequential MB/s of one reader of one ledger, and two readers' aggregate;
* GETs per GiB replayed and read amplification (bytes fetched / bytes of
  the object the replay consumed);
* peak traced memory of a replay against the read-ahead budget.

S3 (moto's server), when moto is installed: sequential read vs a raw
sequential ranged read of the same object with the same buffer size; and
cold random entry reads (fresh handle, index loaded), where request counts
dominate: GETs per read, and the time against one raw ranged GET of a read
buffer each.

Spark (local[2], one session), when PySpark is installed: the
``pulsar-offload`` scan vs Spark's own Parquet scan of the same payloads,
``sum(length(payload))``.

Streaming (PIP-76): append p99 with streaming on vs off, streaming offload
from the hot tier (the segment worker's whole path: read, check, frame,
upload) vs a raw copy of the same bytes, and the handle alone, given
ready-made payloads, vs a raw write (from ``bench_streaming.py``).

Run: ``make bench`` (or ``.venv/bin/python bench/bench_table.py``).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path

import bench_streaming as streamed
import spark_vs_parquet
from bench_pip17 import timed
from offload_driver_filesystem import FilesystemDriver
from parse_limits import bare_parse, bare_parse_entries

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, StorageDriver, open_driver
from offload_core.formats import pulsar_v1 as v1
from offload_core.instrument import InstrumentedDriver, RequestCounts
from offload_core.offload import SegmentLimits
from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.testing.faults import Latency, SlowDriver

UUID = uuid.UUID(int=13)


def read_sequentially(offloader: BlobStoreLedgerOffloader, ledger_id: int, count: int, batch: int = 100) -> int:
    handle = offloader.read_offloaded(ledger_id, UUID)
    read = 0
    for first in range(0, count, batch):
        read += len(handle.read(first, min(first + batch - 1, count - 1)))
    handle.close()
    return read


def offload_and_raw_seconds(
    offloader: BlobStoreLedgerOffloader,
    driver: StorageDriver,
    handle: InMemoryReadHandle,
    parts: list[bytes],
    repeat: int,
) -> tuple[float, float]:
    """Median seconds of an offload of ``handle`` and of a raw write of
    ``parts`` (the same bytes), alternated, each object deleted after it
    is timed: written objects piling up would make the page cache write
    back during later runs and slow whichever runs then."""
    offloads, raws = [], []
    for run in range(repeat):
        started = time.perf_counter()
        result = offloader.offload(handle, uuid.UUID(int=1000 + run))
        offloads.append(time.perf_counter() - started)
        driver.delete([result.data_key, result.index_key])
        started = time.perf_counter()
        driver.write(f"raw-{run}", iter(parts))
        raws.append(time.perf_counter() - started)
        driver.delete([f"raw-{run}"])
    return statistics.median(offloads), statistics.median(raws)


def remote_offload(root: str, args: argparse.Namespace) -> dict[str, float]:
    """Offload vs a raw write on a store that answers as a remote one
    does (20 ms to first byte, 200 MB/s per request): the next block is
    framed while the current one is sent, so framing hides behind the
    upload."""
    rng = random.Random(11)
    entries = [rng.randbytes(rng.randrange(100, 2000)) for _ in range(args.entries)]
    inner = FilesystemDriver(f"{root}/remote", fsync=False)
    driver = SlowDriver(inner, Latency(0.02), bandwidth=200e6)
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=4 * 2**20)
    handle = InMemoryReadHandle(1, entries)
    result = offloader.offload(handle, UUID)
    data = inner.read(result.data_key)
    parts = [data[i : i + 4 * 2**20] for i in range(0, len(data), 4 * 2**20)]
    offload_time, raw_time = offload_and_raw_seconds(offloader, driver, handle, parts, args.repeat)
    offloader.close()
    return {"offload / raw write, remote-like store (20 ms, 200 MB/s)": raw_time / offload_time}


def warm(root: str, args: argparse.Namespace) -> dict[str, float]:
    rng = random.Random(7)
    entries = [rng.randbytes(rng.randrange(100, 2000)) for _ in range(args.entries)]
    driver = FilesystemDriver(f"{root}/warm", fsync=False)
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=4 * 2**20, read_buffer_size=2**20)
    handle = InMemoryReadHandle(1, entries)
    result = offloader.offload(handle, UUID)
    data = driver.read(result.data_key)
    parts = [data[i : i + 4 * 2**20] for i in range(0, len(data), 4 * 2**20)]
    offload_time, raw_time = offload_and_raw_seconds(offloader, driver, handle, parts, args.repeat)
    assert bare_parse(data) == len(entries)
    # Alternated, medians of five: both are CPU-bound loops of some 30 ms,
    # and timed one after the other the second would carry whatever the
    # kernel's writeback of the offloads above was still doing.
    assert bare_parse_entries(data) == len(entries)
    bares, floors, fetches, reads = [], [], [], []
    for _ in range(max(5, args.repeat)):
        bares.append(timed(lambda: bare_parse(data), 1))
        floors.append(timed(lambda: bare_parse_entries(data), 1))
        fetches.append(timed(lambda: driver.read(result.data_key), 1))
        reads.append(timed(lambda: read_sequentially(offloader, 1, len(entries)), 1))
    bare_time, floor_time, read_time = statistics.median(bares), statistics.median(floors), statistics.median(reads)
    fetch_time = statistics.median(fetches)
    counted = InstrumentedDriver(driver)
    reader = BlobStoreLedgerOffloader(counted, read_buffer_size=2**20)
    gets = 0
    picks = [rng.randrange(len(entries)) for _ in range(args.random_reads)]
    for entry_id in picks:
        handle_ = reader.read_offloaded(1, UUID)
        before = counted.counts.requests["read"]
        assert handle_.read(entry_id, entry_id)[0].data == entries[entry_id]
        gets += counted.counts.requests["read"] - before
    offloader.close()
    reader.close()
    return {
        "sequential read / bare unpack loop (entries/s)": bare_time / read_time,
        "the contract's floor: bare loop building an Entry each / bare loop": bare_time / floor_time,
        "one raw read of the object, then that loop (no overlap) / bare loop": bare_time / (fetch_time + floor_time),
        "GETs per cold random entry (index loaded)": gets / len(picks),
        "offload / raw write (throughput)": raw_time / offload_time,
    }


def cold(root: str, args: argparse.Namespace) -> dict[str, float]:
    count = args.cold_mib * 1024
    payload = random.Random(3).randbytes(1024)
    store = FilesystemDriver(f"{root}/cold", fsync=False)
    BlobStoreLedgerOffloader(store, max_block_size=64 * 2**20).offload(InMemoryReadHandle(1, [payload] * count), UUID)
    object_size = store.stat(v1.data_key(str(UUID), 1)).size
    budget = args.budget_mib * 2**20

    def fresh() -> tuple[BlobStoreLedgerOffloader, InstrumentedDriver, ReadAheadPool]:
        slow = InstrumentedDriver(SlowDriver(store, Latency(args.latency)))
        pool = ReadAheadPool(total_bytes=budget, reader_bytes=budget // 2, workers=16)
        return BlobStoreLedgerOffloader(slow, read_ahead=pool), slow, pool

    def one_reader() -> tuple[float, RequestCounts]:
        offloader, slow, pool = fresh()
        before = slow.counts.snapshot()
        started = time.perf_counter()
        assert read_sequentially(offloader, 1, count) == count
        seconds = time.perf_counter() - started
        offloader.close()
        pool.close()
        return seconds, slow.counts.since(before)

    def two_readers() -> float:
        offloader, _, pool = fresh()
        started = time.perf_counter()
        threads = [threading.Thread(target=read_sequentially, args=(offloader, 1, count)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
        offloader.close()
        pool.close()
        return seconds

    # Alternated, medians of ``repeat``: on a 2-core machine one replay
    # can lose the CPU to something else for a while.
    ones, twos = [], []
    for _ in range(args.repeat):
        seconds, spent = one_reader()
        ones.append(seconds)
        twos.append(two_readers())
    one = count * 1024 / statistics.median(ones) / 1e6
    two = 2 * count * 1024 / statistics.median(twos) / 1e6

    offloader, slow, pool = fresh()
    tracemalloc.start()
    baseline = tracemalloc.get_traced_memory()[0]
    read_sequentially(offloader, 1, count)
    peak = tracemalloc.get_traced_memory()[1] - baseline
    tracemalloc.stop()
    offloader.close()
    pool.close()
    data_gets = spent.requests["read"]
    return {
        f"cold sequential MB/s, one reader ({args.latency * 1000:.0f} ms to first byte)": one,
        "cold: two readers' aggregate / one reader": two / one,
        "cold: GETs per GiB replayed": data_gets / (object_size / 2**30),
        "cold: read amplification (fetched / object bytes)": spent.bytes_read / object_size,
        "cold: peak traced memory / read-ahead budget": peak / budget,
    }


def s3(args: argparse.Namespace) -> dict[str, float]:
    try:
        from offload_driver_s3 import S3Driver

        from tests.emulators import MotoS3
    except ImportError:
        return {}
    server = MotoS3.start()
    try:
        server.create_bucket("bench")
        driver: StorageDriver = S3Driver("bench", **server.client_options())  # type: ignore[arg-type]
        rng = random.Random(5)
        entries = [rng.randbytes(rng.randrange(100, 2000)) for _ in range(args.entries)]
        offloader = BlobStoreLedgerOffloader(driver, max_block_size=8 * 2**20, read_buffer_size=2**20)
        result = offloader.offload(InMemoryReadHandle(1, entries), UUID)
        size = result.data_object_length

        def raw() -> None:
            for start in range(0, size, 2**20):
                driver.read(result.data_key, start, min(start + 2**20, size))

        raw_time = timed(raw, args.repeat)
        read_time = timed(lambda: read_sequentially(offloader, 1, len(entries)), args.repeat)
        offloader.close()
        return {
            "S3 (moto) sequential read / raw ranged reads of 1 MiB (throughput)": raw_time / read_time,
            **s3_cold_random(driver, entries, size, args),
        }
    finally:
        server.stop()


def s3_cold_random(
    driver: StorageDriver, entries: list[bytes], size: int, args: argparse.Namespace
) -> dict[str, float]:
    """Cold random entry reads on S3, where requests dominate: each read
    on a fresh handle (its index loaded beforehand, as a broker keeps
    them), against the limit of one raw ranged GET of one read buffer
    (what a read of one entry must fetch) at as many random places."""
    rng = random.Random(17)
    picks = [rng.randrange(len(entries)) for _ in range(args.random_reads // 4)]
    counted = InstrumentedDriver(driver)
    reader = BlobStoreLedgerOffloader(counted, read_buffer_size=2**20)
    handles = [reader.read_offloaded(1, UUID) for _ in picks]
    data_key = v1.data_key(str(UUID), 1)
    before = counted.counts.requests["read"]
    started = time.perf_counter()
    for handle, entry_id in zip(handles, picks, strict=True):
        assert handle.read(entry_id, entry_id)[0].data == entries[entry_id]
        handle.close()
    ours = time.perf_counter() - started
    gets = counted.counts.requests["read"] - before
    starts = [rng.randrange(max(1, size - 2**20)) for _ in picks]
    started = time.perf_counter()
    for start in starts:
        driver.read(data_key, start, start + 2**20)
    raw = time.perf_counter() - started
    reader.close()
    return {
        "S3 (moto) GETs per cold random entry (index loaded)": gets / len(picks),
        "S3 (moto) cold random entry read / one raw 1 MiB ranged GET (time)": ours / raw,
    }


def streaming(root: str) -> dict[str, float]:
    """PIP-76 streaming offload's ratios (see ``bench_streaming.py``)."""
    p99 = streamed.append_p99s(streamed.REPEAT)
    limits = SegmentLimits(streaming_block_size=streamed.BLOCK, max_segment_size=1 << 30,
                           max_buffer_size=4 * streamed.BLOCK)  # fmt: skip
    driver = open_driver(f"file://{root}/streaming")  # as bench_streaming.py: the default, fsync on
    took = streamed.raw_and_stream_seconds(driver, limits, 1000, streamed.THROUGHPUT_REPEAT)
    with streamed.hot_tier_ledger(Path(root), 1000) as ledger:
        raw_copy, from_hot_tier, _ = streamed.copy_and_stream_from_hot_tier(
            driver, limits, ledger, streamed.THROUGHPUT_REPEAT
        )
    return {
        "streaming: append p99, streaming on / off": p99.ratio,
        "streaming: append p99, off / off again (the measurement's spread)": p99.spread,
        "streaming: append p99, off with the other core busy / off (the hardware's share)": p99.busy_core,
        "streaming: append p99, on / off with the other core busy": p99.ratio_to_busy_core,
        "streaming: offload from the hot tier / raw copy, 1 KB entries (throughput)": raw_copy / from_hot_tier,
        "streaming: the handle alone, ready-made payloads / raw write, 1 KB entries": took.raw / took.stream,
        "streaming: raw write / a data then an index object, unframed (the format's floor)": took.raw / took.floor,
    }


GOALS = {
    "sequential read / bare unpack loop (entries/s)": ">= 0.8",
    "GETs per cold random entry (index loaded)": "<= 1.0",
    "offload / raw write (throughput)": ">= 0.9",
    "offload / raw write, remote-like store (20 ms, 200 MB/s)": ">= 0.9",
    "cold: two readers' aggregate / one reader": ">= 1.8",
    "cold: GETs per GiB replayed": "<= 128",
    "cold: read amplification (fetched / object bytes)": "<= 1.05",
    "cold: peak traced memory / read-ahead budget": "<= 1.1",
    "S3 (moto) sequential read / raw ranged reads of 1 MiB (throughput)": ">= 0.9",
    "S3 (moto) GETs per cold random entry (index loaded)": "<= 1.0",
    "S3 (moto) cold random entry read / one raw 1 MiB ranged GET (time)": "<= 1.1",
    "pulsar-offload Spark scan / Spark's Parquet scan (throughput)": ">= 0.6",
    "the API's floor: a Python source reading nothing / Parquet scan": "(limit)",
    "pulsar-offload Spark scan / Spark's Parquet scan (throughput), 2 KB payloads": ">= 0.6, or 0.9 x the floor",
    "the API's floor: a Python source reading nothing / Parquet scan, 2 KB payloads": "(limit)",
    "the contract's floor: bare loop building an Entry each / bare loop": "(limit)",
    "one raw read of the object, then that loop (no overlap) / bare loop": "(limit)",
    "streaming: append p99, streaming on / off": "<= 1.05",
    "streaming: append p99, off / off again (the measurement's spread)": "(limit)",
    "streaming: append p99, off with the other core busy / off (the hardware's share)": "(limit)",
    "streaming: append p99, on / off with the other core busy": "(ours)",
    "streaming: offload from the hot tier / raw copy, 1 KB entries (throughput)": ">= 0.9",
    "streaming: the handle alone, ready-made payloads / raw write, 1 KB entries": "(part)",
    "streaming: raw write / a data then an index object, unframed (the format's floor)": "(limit)",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=40000)
    parser.add_argument("--random-reads", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cold-mib", type=int, default=256, help="ledger size of the cold scenario")
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--budget-mib", type=int, default=128)
    parser.add_argument("--spark-ledgers", type=int, default=4)
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--no-streaming", action="store_true")
    args = parser.parse_args()
    results: dict[str, float] = {}
    # Run in this order (streaming first: it writes with fsync, and waits
    # on the writeback of whatever the others wrote without it), shown in
    # the table's order below.
    scenarios: dict[str, Callable[[str], dict[str, float]]] = {}
    if not args.no_streaming:
        scenarios["streaming"] = streaming
    scenarios["warm"] = lambda root: warm(root, args)
    scenarios["remote"] = lambda root: remote_offload(root, args)
    scenarios["cold"] = lambda root: cold(root, args)
    if not args.no_spark:
        scenarios["spark"] = lambda root: spark_vs_parquet.spark(root, args)
    measured: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as root:
        for name, scenario in scenarios.items():
            # What the scenarios before wrote reaches the disk first: its
            # writeback would otherwise land in this one's timings (an
            # fsync waits for the journal, which carries every file's data).
            os.sync()
            measured[name] = scenario(root)
    if not args.no_s3:
        os.sync()
        measured["s3"] = s3(args)
    for name in ("warm", "remote", "cold", "spark", "streaming", "s3"):
        results.update(measured.get(name, {}))
    print(f"\n{'offload-core against the limit (one run)':<72} {'value':>9}  goal")
    for name, value in results.items():
        goal = GOALS.get(name, ">= 160" if name.startswith("cold sequential") else "")
        print(f"  {name:<70} {value:9.3f}  {goal}")


if __name__ == "__main__":
    main()
