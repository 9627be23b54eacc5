"""Kafka tiered storage (KIP-405) on a large segment, measured in one run:

* copy of a 1 GiB segment through ``RemoteStorageManager.copy_log_segment``
  (CRC check and index entries while streaming) vs a raw driver write of
  the same file in the same parts (throughput), and the copy's peak traced
  memory in read buffers;
* ``fetch_log_segment`` from the middle of the segment, reading 64 MiB:
  peak traced memory in read buffers (lazy: never the segment);
* ``RemoteLogReader.records`` from an offset in the middle with the offset
  index cached: GETs per read (goal <= 2);
* optionally (``--latency``), a cold sequential fetch of the segment at
  100 ms to first byte with read-ahead: MB/s and peak memory vs budget.

Run: ``.venv/bin/python bench/bench_rsm.py`` (``--gib`` sets the size).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

from offload_core.formats import kafka
from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, TopicIdPartition, TopicPartition
from offload_core.rsm.log_reader import RemoteLogReader
from offload_core.rsm.types import LogSegmentData
from offload_core.testing.faults import Latency, SlowDriver

MiB = 2**20
RECORDS_PER_BATCH = 64


def write_segment(directory: Path, size: int, *, distinct: bool = False) -> tuple[LogSegmentData, int]:
    """A segment of ~``size`` bytes: one 1 MiB batch repeated with its base
    offset patched (the CRC does not cover the base offset, so every copy
    stays a valid batch), or (``distinct``) 1 MiB batches of fresh random
    records each, which no compressor shrinks: a repeated batch is
    random only within 1 MiB, and zstd's window finds the repeats in a
    larger chunk."""
    template = bytearray(kafka.encode_batch(_random_records(), base_offset=0))
    header = kafka.decode_batch_header(template)
    count = size // len(template)
    indexes = kafka.IndexDeriver(0)
    with open(directory / f"{0:020d}.log", "wb") as log:
        for n in range(count):
            if distinct and n:
                template = bytearray(kafka.encode_batch(_random_records(), base_offset=0))
            template[0:8] = (n * RECORDS_PER_BATCH).to_bytes(8, "big")
            log.write(template)
            indexes.add(replace(header, base_offset=n * RECORDS_PER_BATCH, position=n * len(template)))
    derived = indexes.finish()
    end = count * RECORDS_PER_BATCH
    (directory / f"{0:020d}.index").write_bytes(kafka.encode_offset_index(derived.offset_index, 0))
    (directory / f"{0:020d}.timeindex").write_bytes(kafka.encode_time_index(derived.time_index, 0))
    (directory / f"{end:020d}.snapshot").write_bytes(kafka.encode_producer_snapshot([]))
    data = LogSegmentData(directory / f"{0:020d}.log", directory / f"{0:020d}.index",
                          directory / f"{0:020d}.timeindex", None, directory / f"{end:020d}.snapshot",
                          kafka.encode_leader_epochs([(0, 0)]))  # fmt: skip
    return data, count * len(template)


def _random_records() -> list[kafka.Record]:
    return [kafka.Record(i, 1_700_000_000_000 + i, f"k{i}".encode(), os.urandom(16 * 1024 - 40))
            for i in range(RECORDS_PER_BATCH)]  # fmt: skip


def traced(action):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    started = time.perf_counter()
    result = action()
    elapsed = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return result, elapsed, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--buffer-mib", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--cold-mib", type=int, default=256, help="bytes the cold sequential fetch reads")
    args = parser.parse_args()
    buffer = args.buffer_mib * MiB
    with tempfile.TemporaryDirectory() as root:
        source = Path(root) / "orders-0"
        source.mkdir()
        data, size = write_segment(source, int(args.gib * 1024 * MiB))
        driver = open_driver(f"file://{root}/store")
        tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 0))

        def raw() -> None:
            with open(data.log_segment, "rb") as log:
                driver.write("raw/copy.log", iter(lambda: log.read(buffer), b""), metadata={})

        rsm = RemoteStorageManager(driver, buffer_size=buffer)
        raw_samples, copy_samples = [], []
        for _ in range(args.repeat):  # alternated, so disk writeback weighs on both alike
            started = time.perf_counter()
            raw()
            raw_samples.append(time.perf_counter() - started)
            driver.delete("raw/copy.log")
            started = time.perf_counter()
            rsm.copy_log_segment(tp, data)  # a re-copy replaces the last one
            copy_samples.append(time.perf_counter() - started)
        raw_seconds, copy_seconds = statistics.median(raw_samples), statistics.median(copy_samples)
        _, _, copy_peak = traced(lambda: rsm.copy_log_segment(tp, data))
        (segment,) = rsm.list_remote_segments(tp)

        def fetch_middle() -> int:
            with rsm.fetch_log_segment(segment, size // 2) as stream:
                return sum(len(stream.read(buffer)) for _ in range(64 * MiB // buffer))

        _, _, fetch_peak = traced(fetch_middle)
        reader = RemoteLogReader(rsm, tp)
        middle = segment.end_offset // 2
        rsm.offset_index(segment)
        rsm.manifest(segment)
        before = driver.request_counts["read"]
        first = next(iter(reader.records(middle, max_bytes=1)))
        gets = driver.request_counts["read"] - before
        assert first.record.offset == middle

        pool = ReadAheadPool(total_bytes=128 * MiB, reader_bytes=64 * MiB, range_size=16 * MiB, workers=8)
        slow = SlowDriver(driver, Latency(args.latency))
        cold_rsm = RemoteStorageManager(slow, buffer_size=buffer, read_ahead=pool)
        want = min(args.cold_mib * MiB, size)

        def cold_read() -> int:
            with cold_rsm.fetch_log_segment(segment, 0, want - 1) as stream:
                return sum(len(chunk) for chunk in iter(lambda: stream.read(buffer), b""))

        served, cold_seconds, cold_peak = traced(cold_read)
        pool.close()

    print(f"\nKafka RSM, a {size / 2**30:.2f} GiB segment of 1 MiB batches, {args.buffer_mib} MiB read buffer")
    print(f"  copy / raw driver write of the same file (throughput)       {raw_seconds / copy_seconds:9.3f}  >= 0.9")
    print(f"  copy: peak traced memory, in read buffers                    {copy_peak / buffer:9.2f}  a few")
    print(f"  fetch 64 MiB from the middle: peak traced memory, in buffers {fetch_peak / buffer:9.2f}  a few")
    print(f"  read by offset, offset index cached: GETs                    {gets:9d}  <= 2")
    print(
        f"  cold fetch at {args.latency * 1000:.0f} ms to first byte, read-ahead: MB/s            "
        f"{served / cold_seconds / 1e6:9.1f}  >= 160"
    )
    print(f"  cold fetch: peak traced memory / read-ahead budget           {cold_peak / pool.total_bytes:9.3f}  <= 1.1")


if __name__ == "__main__":
    main()
