"""Append latency with threshold offload on vs off, measured in one run.

Threshold offloads run in a worker process (the default,
managedLedgerOffloadWorkerProcesses = 1) or on a broker thread (0).

Each run appends 3 ledgers of 20,000 x 1 KB entries to a topic on the
filesystem store (fsync off, as the page cache makes the append itself
cheap); "on" sets managedLedgerOffloadThresholdInBytes = 0, so every sealed
ledger is offloaded at once, in the background. Reported: p50, p99.9 and
max append latency, and one ledger's offload time for scale (the goal: max
append with offload on at most 0.2x one ledger's offload; p99.9 within 10%
of offload off).
"""

from __future__ import annotations

import statistics
import tempfile
import time

from offload_core.managed_ledger import Broker, parse_config

ENTRIES = 20_000
LEDGERS = 3


def run(threshold: int, workers: int = 1) -> list[float]:
    with tempfile.TemporaryDirectory() as directory:
        config = parse_config({
            "managedLedgerMaxEntriesPerLedger": ENTRIES,
            "managedLedgerOffloadThresholdInBytes": threshold,
            "managedLedgerFsyncPolicy": "none",
            "managedLedgerOffloadMaxBlockSizeInBytes": 4 << 20,
            "managedLedgerOffloadWorkerProcesses": workers,
        })  # fmt: skip
        with Broker(directory, config) as broker:
            topic = broker.topic("bench/append/latency")
            payload = b"x" * 1000
            latencies = []
            for _ in range(ENTRIES * LEDGERS):
                started = time.perf_counter()
                topic.append(payload)
                latencies.append(time.perf_counter() - started)
            broker.drain()
        return latencies


def one_ledger_offload_seconds(workers: int) -> float:
    """One sealed 20 MB ledger's offload (the second of two, so a worker
    process is already started)."""
    with tempfile.TemporaryDirectory() as directory:
        config = parse_config({"managedLedgerMaxEntriesPerLedger": ENTRIES, "managedLedgerFsyncPolicy": "none",
                               "managedLedgerOffloadMaxBlockSizeInBytes": 4 << 20,
                               "managedLedgerOffloadWorkerProcesses": workers})  # fmt: skip
        with Broker(directory, config) as broker:
            topic = broker.topic("bench/append/one")
            for _ in range(ENTRIES):
                topic.append(b"x" * 1000)
            topic.offload_prefix()
            for _ in range(ENTRIES):  # the 20,000th append seals the second ledger
                topic.append(b"x" * 1000)
            started = time.perf_counter()
            topic.offload_prefix()
            return time.perf_counter() - started


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    off = run(-1)
    on = run(0)
    in_threads = run(0, workers=0)
    offload = one_ledger_offload_seconds(1)
    offload_in_thread = one_ledger_offload_seconds(0)
    print(f"one 20 MB ledger's offload: {1000 * offload:.1f} ms in a worker process, "
          f"{1000 * offload_in_thread:.1f} ms on a broker thread")  # fmt: skip
    print(f"{'threshold offload':<28} {'p50 us':>8} {'p99.9 us':>9} {'max ms':>8}")
    for name, values in (("off", off), ("on, worker process", on), ("on, broker thread", in_threads)):
        print(f"{name:<28} {1e6 * statistics.median(values):>8.1f} {1e6 * percentile(values, 0.999):>9.1f} "
              f"{1000 * max(values):>8.2f}")  # fmt: skip
    print(f"max append (on, worker) / one ledger's offload: {max(on) / offload:.3f} (goal <= 0.2)")
    print(f"p99.9 on (worker) / off: {percentile(on, 0.999) / percentile(off, 0.999):.2f} (goal <= 1.1)")
    print(f"p99.9 on (broker thread) / off: {percentile(in_threads, 0.999) / percentile(off, 0.999):.2f}")


if __name__ == "__main__":
    main()
