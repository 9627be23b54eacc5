"""A ``readStream`` trigger over a large store (issue 42 items 4 and 5):
what ``latestOffset`` and a micro-batch's plan cost on the driver once the
query has read the store, when 1% more has been tiered.

A filesystem store is built (:mod:`bench_planning`'s builders): for
``pulsar-offload``, N small v1 ledgers and N v2 segments; for
``kafka-remote``, N segments of one topic over ten partitions. A
streaming reader takes its first offset, then N / 100 more of each kind
are added and the second trigger runs:

* ``trigger s``: ``latestOffset`` of the second trigger (wall time);
* ``trigger GETs``: the objects it reads (every driver it opens counted),
  and ``trigger other requests`` the rest but listings (stats);
* ``batch plan s`` / ``batch plan GETs``: ``partitions`` of that
  micro-batch (the new objects only);
* ``cold trigger s`` / ``cold GETs``: the same ``latestOffset`` by a reader
  that has read nothing yet (what every trigger cost before the reader
  kept what it had read: one index or manifest GET an object);
* ``listing s``: the floor, one bare listing of the store by the driver.

Run: ``.venv/bin/python bench/bench_stream_triggers.py`` (N = 10,000;
``--sizes``, ``--sources``, ``--dir``, ``--help``). Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from pyspark.sql.streaming.datasource import ReadAllAvailable

from offload_core import open_driver
from offload_core.spark.source import KAFKA_SCHEMA, SCHEMA
from offload_core.spark.streaming_kafka import make_stream_reader as kafka_stream
from offload_core.spark.streaming_pulsar import make_stream_reader

sys.path.insert(0, os.path.dirname(__file__))
from bench_planning import counted_requests, kafka_segments, v1_ledgers, v2_segments  # noqa: E402


def timed_gets(work: Any) -> tuple[float, int, Any, int]:
    """Seconds, GETs, what ``work`` returned, and the other requests but listings (stats)."""
    with counted_requests() as requests:
        started = time.perf_counter()
        result = work()
        seconds = time.perf_counter() - started
    return seconds, requests["read"], result, sum(n for op, n in requests.items() if op not in ("read", "list"))


def pulsar_store(root: str, count: int) -> tuple[Callable[[], Any], Callable[[], None]]:
    """A ``pulsar-offload`` reader's maker, and what adds 1% more."""
    # Ledger ids: v1 from 0, segments' from 10**9, the ones added after the first trigger past both.
    v1_ledgers(os.path.join(root, "v1"), count)
    v2_segments(os.path.join(root, "v2"), count, first_id=10**9)

    def more() -> None:
        v1_ledgers(os.path.join(root, "v1-more"), count // 100, first_id=count)
        v2_segments(os.path.join(root, "v2-more"), count // 100, first_id=2 * 10**9)

    return lambda: make_stream_reader({"path": f"file://{root}", "decode": "none"}, SCHEMA), more


def kafka_store(root: str, count: int) -> tuple[Callable[[], Any], Callable[[], None]]:
    """A ``kafka-remote`` reader's maker, and what adds 1% more."""
    kafka_segments(root, count)
    options = {"url": f"file://{root}", "subscribe": "orders", "startingOffsets": "earliest"}
    return lambda: kafka_stream(options, KAFKA_SCHEMA), lambda: kafka_segments(root, count // 100, first=count)


SOURCES = {"pulsar-offload": pulsar_store, "kafka-remote": kafka_store}


def measure(source: str, count: int, work: str) -> dict[str, Any]:
    root = os.path.join(work, f"{source}-{count}")
    made, more = SOURCES[source](root, count)
    objects = 2 * count if source == "pulsar-offload" else count
    url = f"file://{root}"
    reader = made()
    first = reader.latestOffset(reader.initialOffset(), ReadAllAvailable())
    more()
    trigger_s, trigger_gets, second, trigger_other = timed_gets(lambda: reader.latestOffset(first, ReadAllAvailable()))
    plan_s, plan_gets, _, _ = timed_gets(lambda: reader.partitions(first, second))
    cold = made()
    cold_s, cold_gets, _, _ = timed_gets(lambda: cold.latestOffset(first, ReadAllAvailable()))
    with open_driver(url) as driver:
        started = time.perf_counter()
        sum(1 for _ in driver.list(""))
        listing_s = time.perf_counter() - started
    return {"source": source, "objects": objects, "added": objects // 100, "trigger s": trigger_s,
            "trigger GETs": trigger_gets, "trigger other requests": trigger_other,
            "batch plan s": plan_s, "batch plan GETs": plan_gets, "cold trigger s": cold_s, "cold GETs": cold_gets,
            "listing s": listing_s}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000", help="objects of each kind, comma-separated")
    parser.add_argument("--sources", default=",".join(SOURCES), help=f"of {', '.join(SOURCES)}")
    parser.add_argument("--dir", default=None, help="where the stores are built (default: a temporary directory)")
    args = parser.parse_args()
    columns = ["source", "objects", "added", "trigger s", "trigger GETs", "trigger other requests", "batch plan s",
               "batch plan GETs", "cold trigger s", "cold GETs", "listing s"]  # fmt: skip
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        print(" | ".join(columns))
        for source, size in ((s, int(n)) for s in args.sources.split(",") for n in args.sizes.split(",")):
            row = measure(source, size, work)
            print(" | ".join(f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c]) for c in columns),
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
