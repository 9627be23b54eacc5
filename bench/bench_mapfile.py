"""MapFile ledgers (Pulsar's file-system offloader): what checking the
``.crc`` files costs a sequential read.

A ledger of 1 KiB entries is offloaded to a local directory (so with
``.data.crc`` / ``.index.crc``), NONE and BLOCK compression, then read
whole, 1,000 entries a read, with read-ahead, once with its checksum files
and once with them moved aside (the reader then checks nothing), rounds
alternated, medians. The ratios: throughput with the check over without,
and CPU time (all threads) with the check over without.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from offload_driver_filesystem import FilesystemDriver

from offload_core import InMemoryReadHandle
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader

ML = "public/default/persistent/bench"
U = uuid.UUID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")


def read_seconds(offloader: MapFileLedgerOffloader) -> tuple[float, float]:
    """Wall and CPU seconds (every thread's: read-ahead checks on the pool's) of one whole read."""
    started, cpu = time.perf_counter(), time.process_time()
    handle = offloader.read_offloaded(5, U, {"ManagedLedgerName": ML})
    for first in range(0, handle.last_entry_id + 1, 1000):
        handle.read(first, min(first + 999, handle.last_entry_id))
    handle.close()
    return time.perf_counter() - started, time.process_time() - cpu


def measure(root: Path, compression: str, megabytes: int, rounds: int) -> tuple[float, float, float, float]:
    driver = FilesystemDriver(str(root / compression))
    offloader = MapFileLedgerOffloader(driver, compression=compression)
    entries = [n.to_bytes(8, "big") * 128 for n in range(megabytes * 1024)]
    offloader.offload(InMemoryReadHandle(5, entries), U, {"ManagedLedgerName": ML})
    directory = root / compression / ML / f"5-{U}"
    crcs = [directory / ".data.crc", directory / ".index.crc"]
    checked: list[tuple[float, float]] = []
    unchecked: list[tuple[float, float]] = []
    read_seconds(offloader)  # warm the page cache
    for _ in range(rounds):
        checked.append(read_seconds(offloader))
        for crc in crcs:
            crc.rename(root / crc.name)
        unchecked.append(read_seconds(offloader))
        for crc in crcs:
            (root / crc.name).rename(crc)
    offloader.close()
    return (statistics.median(t[0] for t in checked), statistics.median(t[0] for t in unchecked),
            statistics.median(t[1] for t in checked), statistics.median(t[1] for t in unchecked))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=int, default=64, help="ledger size in MiB (default 64)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        print(f"{'compression':<12} {'with .crc (ms)':>15} {'without (ms)':>13} {'throughput ratio':>17} "
              f"{'CPU ms with / without':>22} {'CPU ratio':>10}")  # fmt: skip
        for compression in ("NONE", "BLOCK"):
            wall, bare, cpu, bare_cpu = measure(Path(directory), compression, args.megabytes, args.rounds)
            print(f"{compression:<12} {1000 * wall:>15.1f} {1000 * bare:>13.1f} {bare / wall:>17.3f} "
                  f"{f'{1000 * cpu:.0f} / {1000 * bare_cpu:.0f}':>22} {cpu / bare_cpu:>10.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
