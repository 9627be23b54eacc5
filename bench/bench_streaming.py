"""Streaming offload (PIP-76), measured in one run.

1. Append latency with streaming on vs off: 3 ledgers of 20,000 x 1 KB
   entries on the filesystem store (fsync off), 4 MiB blocks, 64 MB
   segments; p50 and p99 (goal: p99 with streaming within 5% of off).
2. Offload throughput vs the limit: 64 MB of 1 KB (and of 16 KB) entries
   offered to an OffloadHandle on the filesystem driver, against a raw
   driver write of the same bytes in 4 MiB parts (goal: >= 0.9 of the raw
   throughput).
3. Peak buffer memory vs its bound: the same offer loop against a store
   that takes 20 ms per part (a producer faster than the store); the
   handle's peak buffered bytes must never pass its bound.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from offload_core import open_driver
from offload_core.managed_ledger import Broker, parse_config
from offload_core.model import Entry, ObjectInfo
from offload_core.offload import BlobStoreLedgerOffloader, OfferResult, SegmentLimits
from offload_core.storage import BytesLike, StorageDriver

ENTRIES = 20_000
LEDGERS = 3
BLOCK = 4 << 20
STREAM_BYTES = 64 << 20


def append_latencies(streaming: bool) -> list[float]:
    with tempfile.TemporaryDirectory() as directory:
        config = parse_config({
            "managedLedgerMaxEntriesPerLedger": ENTRIES,
            "managedLedgerFsyncPolicy": "none",
            "managedLedgerOffloadMaxBlockSizeInBytes": BLOCK,
            "managedLedgerOffloadStreamingEnabled": streaming,
            "maxSizePerOffloadSegmentMbytes": 64,
        })  # fmt: skip
        with Broker(directory, config) as broker:
            topic = broker.topic("bench/streaming/latency")
            payload = b"x" * 1000
            latencies = []
            for _ in range(ENTRIES * LEDGERS):
                started = time.perf_counter()
                topic.append(payload)
                latencies.append(time.perf_counter() - started)
            broker.drain()
            if streaming:
                assert topic.segments(), "streaming wrote no segment"
        return latencies


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def entries(total: int, size: int) -> list[Entry]:
    payload = b"y" * size
    return [Entry(1, entry_id, payload) for entry_id in range(total // size)]


def stream_seconds(driver: StorageDriver, limits: SegmentLimits, size: int = 1000) -> tuple[float, int]:
    """Seconds to stream STREAM_BYTES of ``size``-byte entries (offered in
    batches, as the managed ledger's pump does) and complete the segment;
    the handle's peak buffered bytes."""
    handle = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK).streaming_offload(uuid.uuid4(), limits=limits)
    batch = entries(STREAM_BYTES, size)
    started = time.perf_counter()
    at = 0
    while at < len(batch):
        taken, outcome = handle.offer_entries(batch[at : at + 1024])
        at += taken
        if outcome is OfferResult.FAIL_BUFFER_FULL:
            time.sleep(0.0005)
    handle.close()
    assert handle.result() is not None
    return time.perf_counter() - started, handle.peak_buffered_bytes


def raw_write_seconds(driver: StorageDriver, size: int) -> float:
    part = b"z" * BLOCK
    started = time.perf_counter()
    driver.write("raw-copy", (part[: min(BLOCK, size - offset)] for offset in range(0, size, BLOCK)))
    return time.perf_counter() - started


class SlowStore(StorageDriver):
    """A filesystem store that takes 20 ms per part written."""

    counts_requests = True

    def __init__(self, inner: StorageDriver) -> None:
        self.inner = inner

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        def slow() -> Iterator[BytesLike]:
            for part in parts:
                time.sleep(0.02)
                yield part

        return self.inner.write(key, slow(), metadata=metadata, if_absent=if_absent)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        return self.inner.read(key, start, end)

    def _stat(self, key: str) -> ObjectInfo:
        return self.inner.stat(key)

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def _delete(self, keys: list[str]) -> None:  # type: ignore[override]
        self.inner.delete(keys)


def main() -> None:
    off = append_latencies(False)
    on = append_latencies(True)
    print(f"{'streaming':<10} {'p50 us':>8} {'p99 us':>8} {'max ms':>8}")
    for name, values in (("off", off), ("on", on)):
        print(f"{name:<10} {1e6 * statistics.median(values):>8.1f} {1e6 * percentile(values, 0.99):>8.1f} "
              f"{1000 * max(values):>8.2f}")  # fmt: skip
    print(f"append p99 on / off: {percentile(on, 0.99) / percentile(off, 0.99):.3f} (goal <= 1.05)")

    limits = SegmentLimits(streaming_block_size=BLOCK, max_segment_size=1 << 30, max_buffer_size=4 * BLOCK)
    with tempfile.TemporaryDirectory() as directory:
        driver = open_driver(f"file://{Path(directory) / 'bucket'}")
        raw = raw_write_seconds(driver, STREAM_BYTES)
        for size in (1000, 16_000):
            streamed, _ = stream_seconds(driver, limits, size)
            print(f"64 MB of {size} B entries: raw write {1000 * raw:.0f} ms, streaming offload "
                  f"{1000 * streamed:.0f} ms; throughput ratio {raw / streamed:.2f} (goal >= 0.9)")  # fmt: skip
        slow = SlowStore(driver)
        _, peak = stream_seconds(slow, limits)
        print(
            f"slow store (20 ms per part): peak buffer {peak / 2**20:.1f} MiB, bound "
            f"{limits.max_buffer_size / 2**20:.1f} MiB ({'within' if peak <= limits.max_buffer_size else 'OVER'})"
        )


if __name__ == "__main__":
    main()
