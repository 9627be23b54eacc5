"""First read after opening a sealed hot-tier ledger: 40 MB vs 2 MB.

Before sealed ledgers carried an offsets index, opening one scanned and
re-checksummed every record, so the first read cost grew with the ledger
(174 ms for 40 MB vs 9 ms for 2 MB, ratio 19). The goal is a ratio of 2 or
less: the open reads the header and the index, and the read reads one entry.
Median of 7 opens each, page cache warm, measured in one run.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from offload_core.managed_ledger.hot.ledger_file import LedgerFile, index_path

ENTRY = 1024


def write_sealed(path: Path, megabytes: int) -> int:
    ledger = LedgerFile.create(path, 1)
    count = megabytes * 2**20 // ENTRY
    payload = b"x" * ENTRY
    for _ in range(count):
        ledger.append(payload)
    ledger.sync()
    ledger.write_offsets_index()
    ledger.close()
    return count


def first_read_ms(path: Path, count: int) -> float:
    times = []
    for _ in range(7):
        started = time.perf_counter()
        ledger = LedgerFile.open(path, 1, repair=False)
        ledger.read(count // 2, count // 2)
        times.append(time.perf_counter() - started)
        ledger.close()
    return 1000 * statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        results = {}
        for megabytes in (2, 40):
            path = Path(directory) / f"{megabytes}.log"
            count = write_sealed(path, megabytes)
            with_index = first_read_ms(path, count)
            index_path(path).unlink()
            LedgerFile.open(path, 1, repair=False).close()  # scans once, rewrites the index
            index_path(path).unlink()
            started = time.perf_counter()
            LedgerFile.open(path, 1, repair=False).read(count // 2, count // 2)
            scanned = 1000 * (time.perf_counter() - started)
            results[megabytes] = (with_index, scanned)
        print(f"{'ledger':<8} {'first read, index (ms)':>24} {'first read, scan (ms)':>23}")
        for megabytes, (with_index, scanned) in results.items():
            print(f"{megabytes:>4} MB {with_index:>24.2f} {scanned:>23.1f}")
        print(f"ratio 40 MB / 2 MB with the index: {results[40][0] / results[2][0]:.2f} (goal <= 2)")
        print(f"ratio 40 MB / 2 MB scanning:       {results[40][1] / results[2][1]:.1f}")


if __name__ == "__main__":
    main()
