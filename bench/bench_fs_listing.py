"""The filesystem driver's listing of one flat directory (a Pulsar store
keeps every ledger's objects side by side): the whole directory, and a
prefix naming one object in it, against a bare ``os.scandir`` of the same
directory (the limit: a listing must look at every name).

Reports, for ``--objects`` empty files: seconds per listing and the
traced peak of each (``tracemalloc``). Nothing asserts on time. The files
are named as whole ledgers (``{uuid}-ledger-{id}``), their uuids
``sequential`` (``UUID(int=n * 7919)``, mostly zeros: runs F and G) or
``random`` (``uuid4``, as a broker gives them: run G).

Run: ``.venv/bin/python bench/bench_fs_listing.py`` (``--help``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable

from offload_core.plugins import open_driver


def timed(work: Callable[[], int], rounds: int = 5) -> tuple[float, float, int]:
    """Seconds per call (best of ``rounds``), traced peak MB, what it returned."""
    work()  # warm: the directory in the page cache
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        got = work()
        best = min(best, time.perf_counter() - started)
    tracemalloc.start()
    work()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return best, peak / 1e6, got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=50_000)
    parser.add_argument("--dir", default=None, help="where the store is built (default: a temporary directory)")
    parser.add_argument("--uuids", choices=("sequential", "random"), default="sequential")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as root:
        made = (lambda n: uuid.UUID(int=n * 7919)) if args.uuids == "sequential" else (lambda n: uuid.uuid4())
        names = [f"{made(n)}-ledger-{n}" for n in range(args.objects)]
        for name in names:
            open(os.path.join(root, name), "wb").close()  # noqa: SIM115 - created empty, closed at once
        driver = open_driver(f"file://{root}")
        one = names[len(names) // 2]

        def scan() -> int:
            with os.scandir(root) as entries:
                return sum(1 for _ in entries)

        rows = [("bare os.scandir", *timed(scan)),
                ("list(\"\")", *timed(lambda: sum(1 for _ in driver.list("")))),
                ("list(one object's key)", *timed(lambda: sum(1 for _ in driver.list(one))))]  # fmt: skip
        print(f"{args.objects} objects in one directory, {args.uuids} uuids")
        print("listing | s per listing | / bare scan | peak MB | objects")
        for name, seconds, peak, got in rows:
            print(f"{name} | {seconds:.4f} | {seconds / rows[0][1]:.2f} | {peak:.2f} | {got}")


if __name__ == "__main__":
    main()
