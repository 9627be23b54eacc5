"""A walkthrough of the storage layer on the embedded default store.

Writes ledger-shaped objects (entries framed as ``int32 length | int64
entry id | payload``, plus an offsets index) into a local directory through
the storage-driver interface, reads random entries back with ranged reads,
checks every byte, and prints what it did.
"""

from __future__ import annotations

import argparse
import itertools
import random
import struct
import time
from pathlib import Path

from offload_core import open_driver

ENTRY_HEADER = struct.Struct(">iq")
INDEX_ROW = struct.Struct(">qq")


def payload(ledger_id: int, entry_id: int, size: int) -> bytes:
    return bytes((ledger_id * 131 + entry_id * 31 + j) % 256 for j in range(size))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", default="offload-data")
    parser.add_argument("--ledgers", type=int, default=8)
    parser.add_argument("--entries", type=int, default=2000)
    args = parser.parse_args()

    bucket = Path(args.data_dir).resolve() / "walkthrough-bucket"
    store = open_driver(f"file://{bucket}")
    rng = random.Random(7)
    print(f"store: {store!r}")
    print(f"{'object':<28}{'entries':>8}{'bytes':>10}{'checked':>9}{'ms':>8}")
    for ledger_id in range(1, args.ledgers + 1):
        started = time.perf_counter()
        sizes = [rng.randrange(0, 512) for _ in range(args.entries)]
        bodies = [ENTRY_HEADER.pack(size, i) + payload(ledger_id, i, size) for i, size in enumerate(sizes)]
        offsets = list(itertools.accumulate((len(body) for body in bodies[:-1]), initial=0))

        key = f"walkthrough/ledger-{ledger_id}"
        info = store.write(key, iter(bodies), metadata={"ledger-id": str(ledger_id), "format": "walkthrough-1"})
        store.write(key + "-index", b"".join(INDEX_ROW.pack(i, o) for i, o in enumerate(offsets)))

        checked = 0
        for entry_id in rng.sample(range(args.entries), 200):
            row = store.read(key + "-index", entry_id * INDEX_ROW.size, (entry_id + 1) * INDEX_ROW.size)
            _, offset = INDEX_ROW.unpack(row)
            length, stored_id = ENTRY_HEADER.unpack(store.read(key, offset, offset + ENTRY_HEADER.size))
            body = store.read(key, offset + ENTRY_HEADER.size, offset + ENTRY_HEADER.size + length)
            if stored_id != entry_id or body != payload(ledger_id, entry_id, sizes[entry_id]):
                raise SystemExit(f"entry {entry_id} of {key} read back wrong")
            checked += 1
        elapsed = 1000 * (time.perf_counter() - started)
        print(f"{key:<28}{args.entries:>8}{info.size:>10}{checked:>9}{elapsed:>8.1f}")

    listed = list(store.list("walkthrough/"))
    total = sum(info.size for info in listed)
    print(f"listed {len(listed)} objects, {total} bytes under {bucket}; every sampled entry read back byte-identical")
    store.delete([info.key for info in listed])
    print("deleted them again; run `make test` for the full suite")


if __name__ == "__main__":
    main()
