"""PIP-17 ledger offload benchmarks: ratios against raw driver I/O, one run.

* offload throughput vs a raw ``write`` of the same bytes through the same driver;
* sequential read of every entry vs raw sequential ranged reads of the data object;
* storage requests per cold random entry read (fresh handle each time) and warm;
* peak traced memory during offload, in units of the max block size.

Run: ``make bench-all`` (or ``.venv/bin/python bench/bench_pip17.py --help``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable

from offload_driver_filesystem import FilesystemDriver

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, StorageDriver
from offload_core.instrument import InstrumentedDriver
from offload_core.memory import MemoryDriver


def timed(action: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` runs."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


class LazyLedger(InMemoryReadHandle):
    """A ledger whose entries are made on demand, so the handle itself
    holds nothing (for the memory measurement)."""

    def __init__(self, ledger_id: int, sizes: list[int]) -> None:
        super().__init__(ledger_id, [])
        self._sizes = sizes
        self.metadata.length = sum(sizes)
        self.metadata.lastEntryId = len(sizes) - 1

    def read(self, first: int, last: int):  # type: ignore[no-untyped-def]
        from offload_core import Entry

        return [Entry(self.ledger_id, i, bytes([i % 251]) * self._sizes[i]) for i in range(first, last + 1)]


def run(driver_name: str, make_driver: Callable[[], StorageDriver], args: argparse.Namespace) -> dict[str, float]:
    rng = random.Random(7)
    sizes = [rng.randrange(args.entry_min, args.entry_max) for _ in range(args.entries)]
    entries = [rng.randbytes(size) for size in sizes]
    total = sum(sizes)
    block = args.block_size
    results: dict[str, float] = {}

    driver = make_driver()
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=block, read_buffer_size=args.read_buffer)
    handle = InMemoryReadHandle(1, entries)
    payload = b"".join(entries)
    parts = [payload[i : i + block] for i in range(0, len(payload), block)]

    ids = iter(range(10**9))
    offload_time = timed(lambda: offloader.offload(handle, uuid.UUID(int=next(ids))), args.repeat)
    raw_time = timed(lambda: driver.write(f"raw-{next(ids)}", iter(parts)), args.repeat)
    results["offload MB/s"] = total / offload_time / 1e6
    results["raw write MB/s"] = total / raw_time / 1e6
    results["offload / raw write (time)"] = offload_time / raw_time

    the_uuid = uuid.UUID(int=0)
    data_key = offloader.keys(1, the_uuid)[0]
    data_size = driver.stat(data_key).size

    def sequential() -> None:
        reader = offloader.read_offloaded(1, the_uuid)
        for first in range(0, args.entries, 100):
            reader.read(first, min(first + 99, args.entries - 1))

    def raw_sequential() -> None:
        for start in range(0, data_size, args.read_buffer):
            driver.read(data_key, start, start + args.read_buffer)

    seq_time = timed(sequential, args.repeat)
    raw_seq_time = timed(raw_sequential, args.repeat)
    results["sequential read MB/s"] = total / seq_time / 1e6
    results["raw ranged read MB/s"] = data_size / raw_seq_time / 1e6
    results["sequential / raw ranged read (time)"] = seq_time / raw_seq_time

    counted = InstrumentedDriver(driver)
    reader_offloader = BlobStoreLedgerOffloader(counted, max_block_size=block, read_buffer_size=args.read_buffer)
    picks = [rng.randrange(args.entries) for _ in range(args.random_reads)]
    cold_reads = 0
    for entry_id in picks:
        reader = reader_offloader.read_offloaded(1, the_uuid)
        before = counted.counts.requests["read"]
        reader.read(entry_id, entry_id)
        cold_reads += counted.counts.requests["read"] - before
    results["GETs per cold random entry (after open)"] = cold_reads / len(picks)
    before_open = counted.counts.total
    reader_offloader.read_offloaded(1, the_uuid)
    results["requests to open a ledger"] = counted.counts.total - before_open
    warm = reader_offloader.read_offloaded(1, the_uuid)
    before = counted.counts.requests["read"]
    for entry_id in picks:
        warm.read(entry_id, entry_id)
    results["GETs per warm random entry"] = (counted.counts.requests["read"] - before) / len(picks)
    sequential_reader = reader_offloader.read_offloaded(1, the_uuid)
    before = counted.counts.requests["read"]
    for first in range(0, args.entries, 100):
        sequential_reader.read(first, min(first + 99, args.entries - 1))
    results["GETs per sequential entry"] = (counted.counts.requests["read"] - before) / args.entries
    results["CPU us per sequential entry"] = seq_time / args.entries * 1e6

    lazy_sizes = [rng.randrange(args.entry_min, args.entry_max) for _ in range(args.memory_entries)]
    tracemalloc.start()
    BlobStoreLedgerOffloader(make_driver() if driver_name != "memory" else _NullDriver(), max_block_size=block).offload(
        LazyLedger(2, lazy_sizes), uuid.UUID(int=99)
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    results["ledger size / max block size"] = sum(lazy_sizes) / block
    results["peak offload memory / max block size"] = peak / block
    return results


class _NullDriver(MemoryDriver):
    """Consumes parts and keeps nothing: isolates the offloader's own memory."""

    def _write(self, key, parts, metadata, if_absent):  # type: ignore[no-untyped-def]
        size = 0
        for part in parts:
            size += len(part)
        from offload_core import ObjectInfo

        return ObjectInfo(key=key, size=size, metadata=metadata)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=20000)
    parser.add_argument("--entry-min", type=int, default=100)
    parser.add_argument("--entry-max", type=int, default=4000)
    parser.add_argument("--block-size", type=int, default=4 * 2**20)
    parser.add_argument("--read-buffer", type=int, default=2**20)
    parser.add_argument("--random-reads", type=int, default=200)
    parser.add_argument("--memory-entries", type=int, default=60000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"ledger: {args.entries} entries of {args.entry_min}-{args.entry_max} B; max block {args.block_size} B; "
        f"read buffer {args.read_buffer} B; median of {args.repeat}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        drivers: dict[str, Callable[[], StorageDriver]] = {
            "memory": MemoryDriver,
            "filesystem": lambda: FilesystemDriver(f"{tmp}/bucket", fsync=False),
        }
        for name, make in drivers.items():
            print(f"\n[{name}]")
            for metric, value in run(name, make, args).items():
                print(f"  {metric:<42} {value:10.4g}")


if __name__ == "__main__":
    main()
