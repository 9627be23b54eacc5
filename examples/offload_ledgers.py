"""Offload ledgers to a local-directory bucket and read them back.

Builds sealed ledgers of Pulsar-sized messages, offloads each with the
PIP-17 offloader (objects byte-compatible with what Pulsar writes) into
``<data-dir>/bucket``, verifies every block, then reads everything back
sequentially and a sample at random, checking every byte and counting
storage requests.
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from pathlib import Path

import click

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.offload.ledgers.verify import verify_ledger


def message(ledger_id: int, entry_id: int, rng: random.Random) -> bytes:
    header = f"ledger={ledger_id} entry={entry_id} ".encode()
    return header + rng.randbytes(rng.randrange(50, 900))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default="offload-data")
    parser.add_argument("--ledgers", type=int, default=6)
    parser.add_argument("--entries", type=int, default=20000, help="entries per ledger")
    args = parser.parse_args()

    bucket = Path(args.data_dir).resolve() / "bucket"
    offloader = open_offloader(f"file://{bucket}", max_block_size=8 * 2**20, read_buffer_size=2**20)
    for ledger in find_offloaded_ledgers(offloader.driver):
        offloader.driver.delete([ledger.data_key, ledger.index_key])

    rng = random.Random(2026)
    ledgers = {
        ledger_id: [message(ledger_id, entry_id, rng) for entry_id in range(args.entries)]
        for ledger_id in range(1, args.ledgers + 1)
    }
    total_bytes = sum(len(e) for entries in ledgers.values() for e in entries)
    print(f"{args.ledgers} sealed ledgers, {args.ledgers * args.entries} messages, {total_bytes / 1e6:.1f} MB")

    uuids: dict[int, uuid.UUID] = {}
    with click.progressbar(ledgers.items(), label="offloading", length=len(ledgers)) as items:
        for ledger_id, entries in items:
            uuids[ledger_id] = uuid.uuid4()
            offloader.offload(InMemoryReadHandle(ledger_id, entries), uuids[ledger_id], {"ManagedLedgerName": "demo"})

    reports = [verify_ledger(offloader.driver, ledger) for ledger in find_offloaded_ledgers(offloader.driver)]
    print(f"verified {len(reports)} ledgers, {sum(len(r.defects) for r in reports)} defects")

    print("\nGETs: storage reads for a sequential pass over the ledger, and for 100 cold random reads")
    print("(each on a freshly opened handle, so each includes reading the index).")
    print(f"\n{'ledger':>6} {'blocks':>6} {'entries':>8} {'seq GETs':>9} {'cold GETs':>10} {'ms':>7}")
    for ledger_id, entries in ledgers.items():
        started = time.perf_counter()
        handle = offloader.read_offloaded(ledger_id, uuids[ledger_id])
        before = offloader.requests.snapshot()
        for first in range(0, len(entries), 500):
            got = handle.read(first, min(first + 499, len(entries) - 1))
            if [e.data for e in got] != entries[first : first + 500]:
                raise SystemExit(f"ledger {ledger_id}: entries from {first} read back wrong")
        sequential = offloader.requests.since(before).requests["read"]
        before = offloader.requests.snapshot()
        for entry_id in rng.sample(range(len(entries)), 100):
            if (
                offloader.read_offloaded(ledger_id, uuids[ledger_id]).read(entry_id, entry_id)[0].data
                != (entries[entry_id])
            ):
                raise SystemExit(f"ledger {ledger_id}: entry {entry_id} read back wrong")
        random_gets = offloader.requests.since(before).requests["read"]
        elapsed = 1000 * (time.perf_counter() - started)
        print(
            f"{ledger_id:>6} {len(handle.index.entries):>6} {len(entries):>8} {sequential:>9} {random_gets:>10} "
            f"{elapsed:>7.0f}"
        )
    print(f"\nevery entry read back byte-identical from {bucket}")
    print(f"try: .venv/bin/offload ledgers ls file://{bucket}")


if __name__ == "__main__":
    main()
