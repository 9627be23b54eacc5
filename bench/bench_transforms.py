"""What each chunk transform costs, as ratios to the plain offload and read
of the same ledger, measured in one run (filesystem store, page cache warm):

* offload throughput with the transform / without it;
* stored bytes without / with it (compression ratio);
* sequential read throughput with / without it.

The ledger is 150,000 JSON-like order events (compressible, as real
messages are); 4 MiB blocks, 1 MiB chunks.

Run: ``.venv/bin/python bench/bench_transforms.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import uuid

from bench_pip17 import timed
from offload_driver_filesystem import FilesystemDriver
from offload_plugin_aes_gcm import AesGcmTransform, FileKeyring
from offload_plugin_crc32c import Crc32cTransform
from offload_plugin_zstd import ZstdTransform

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle
from offload_core.transforming_driver import TransformingDriver

MiB = 2**20


def event(n: int) -> bytes:
    record = {"order_id": f"ord-{n:08d}", "customer": f"cust-{(n * 7919) % 50_000:05d}",
              "items": [{"sku": f"sku-{(n + i) % 997:04d}", "qty": 1 + (n + i) % 4} for i in range(1 + n % 5)],
              "total_cents": (n * 137) % 100_000, "ts": 1_700_000_000_000 + n * 13}  # fmt: skip
    return json.dumps(record).encode()


def measure(
    offloader: BlobStoreLedgerOffloader, inner: FilesystemDriver, entries: list[bytes], repeat: int
) -> tuple[float, int, float]:
    """Median offload and read seconds, and the stored bytes of one offload."""
    uids = iter(uuid.UUID(int=n) for n in range(1, 100))
    ledger = InMemoryReadHandle(1, entries)
    offload_seconds = timed(lambda: offloader.offload(ledger, next(uids), {}), repeat)
    stored = sum(info.size for info in inner.list("") if not info.key.endswith("-index")) // repeat

    def read_all() -> None:
        handle = offloader.read_offloaded(1, uuid.UUID(int=1), {})
        try:
            for first in range(0, len(entries), 1000):
                handle.read(first, min(first + 999, len(entries) - 1))
        finally:
            handle.close()

    return offload_seconds, stored, timed(read_all, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=150_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    entries = [event(n) for n in range(args.entries)]
    keyring = FileKeyring({"k1": os.urandom(32)}, "k1")
    known = {"zstd": ZstdTransform(), "crc32c": Crc32cTransform(), "aes-gcm": AesGcmTransform(lambda: keyring)}
    chains = {"plain": [], "zstd": ["zstd"], "crc32c": ["crc32c"], "aes-gcm": ["aes-gcm"],
              "zstd+aes-gcm+crc32c": ["zstd", "aes-gcm", "crc32c"]}  # fmt: skip
    results: dict[str, tuple[float, int, float]] = {}
    with tempfile.TemporaryDirectory() as root:
        # Warm-up, so the first chain measured pays no first-run costs.
        BlobStoreLedgerOffloader(FilesystemDriver(f"{root}/warm-up")).offload(InMemoryReadHandle(1, entries),
                                                                              uuid.UUID(int=0), {})  # fmt: skip
        for label, chain in chains.items():
            inner = FilesystemDriver(f"{root}/{label}")
            driver = TransformingDriver(inner, lambda name, distribution=None: known[name], [known[n] for n in chain],
                                        chunk_size=MiB)  # fmt: skip
            results[label] = measure(BlobStoreLedgerOffloader(driver, max_block_size=4 * MiB, read_buffer_size=MiB),
                                     inner, entries, args.repeat)  # fmt: skip
    plain_offload, plain_stored, plain_read = results["plain"]
    logical = sum(len(e) for e in entries)
    print(f"\nchunk transforms vs plain, {args.entries} events ({logical / MiB:.1f} MiB of payloads), one run")
    print(f"  {'transform':<22} {'offload tput':>13} {'stored bytes':>13} {'read tput':>10}")
    for label, (offload_seconds, stored, read_seconds) in results.items():
        print(f"  {label:<22} {plain_offload / offload_seconds:13.2f} {plain_stored / stored:12.2f}x "
              f"{plain_read / read_seconds:10.2f}")  # fmt: skip
    print("  goals: zstd stores >= 3x less at >= 0.7 of plain offload throughput; aes-gcm >= 0.8 of plain")


if __name__ == "__main__":
    main()
