"""Planning at scale (issue 42 item 5): how the Spark sources' planning
grows with the number of objects in a store.

For each kind of object (Pulsar v1 ledgers, v2 segments, MapFile ledgers,
Kafka segments of our layout) a filesystem store (fsync off) is built with
N small objects, then the source's ``plan_partitions`` runs on it:

* planning seconds per 10,000 objects (wall time, untraced run; with
  ``--latency-ms``, each of its requests waits that long first, as
  against a remote store);
* driver peak memory per 10,000 objects (``tracemalloc`` peak of a second,
  traced run: Python allocations of the planning process);
* the partitions pickled, MB per 10,000 objects: each on its own, as
  Spark's planning worker sends them to the JVM, which holds them;
* storage requests per object on the driver, by operation (every driver the
  planning opens is counted: the listing's scans, each GET).

"Objects" are the unit the issue names: ledgers (v1: a data and an index
object each; MapFile: a directory of data and index), segments (v2: a data
and an index object; Kafka: a ``.log``, an ``.index`` and a manifest). The
objects are written from templates the real writers made (v1, MapFile) or
with the pure encoders (v2 segments, Kafka manifests), straight into the
filesystem driver's layout (:class:`RawStore`, as a committed write leaves
it): 0.1 to 0.4 ms a ledger or segment on a quiet machine, so 100,000 take
seconds to a minute a kind. Planning reads only listings and index
objects, which are all real.

Run: ``.venv/bin/python bench/bench_planning.py`` (N = 10,000 and 20,000;
``--sizes 10000,20000,100000`` for the issue's 100,000, ``--help``).
Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import pickle
import tempfile
import time
import tracemalloc
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle
from offload_core.directory_temporaries import META_DIR
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.formats.sidecar_records import encode_record
from offload_core.memory import MemoryDriver
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from offload_core.plugins import PluginManager
from offload_core.rsm.layout import LOG_SUFFIX, MANIFEST_SUFFIX, SegmentManifest, encode_manifest, segment_key
from offload_core.rsm.types import (
    RemoteLogIndexEntry,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
    TopicPartition,
)
from offload_core.testing.faults import SlowDriver
from offload_core.transforming_driver import TransformingDriver

ENTRIES = 20  # entries of 100 B per ledger or segment
SEGMENTS_PER_LEDGER = 100  # v2: one ledger streamed across this many segments
KAFKA_PARTITIONS = 10


class RawStore:
    """Objects written straight into a filesystem driver's layout (the file
    at its key, a sidecar of its metadata under ``META_DIR``), as the driver
    leaves a committed write: a tenth of a millisecond an object where the
    driver's commit protocol takes several."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._made: set[str] = set()

    def write(self, key: str, data: bytes, metadata: dict[str, str] | None = None) -> None:
        self._put(key, data)
        if metadata:
            self._put(f"{META_DIR}/{key}.json", encode_record("", len(data), metadata))

    def _put(self, key: str, data: bytes) -> None:
        path = os.path.join(self.root, key)
        directory = os.path.dirname(path)
        if directory not in self._made:
            os.makedirs(directory, exist_ok=True)
            self._made.add(directory)
        with open(path, "wb") as out:
            out.write(data)


def v1_ledgers(root: str, count: int, first_id: int = 0) -> None:
    """``count`` ledgers (ids from ``first_id``) of one block each: the bytes a real offload wrote, under new keys."""
    template = MemoryDriver()
    payloads = [bytes([n]) * 100 for n in range(ENTRIES)]
    BlobStoreLedgerOffloader(template).offload(InMemoryReadHandle(1, payloads), uuid.UUID(int=1), {})
    objects = {info.key: (template.read(info.key), template.stat(info.key).metadata) for info in template.list()}
    data_key, index_key = v1.data_key(str(uuid.UUID(int=1)), 1), v1.index_key(str(uuid.UUID(int=1)), 1)
    store = RawStore(root)
    for ledger_id in range(first_id, first_id + count):
        name = str(uuid.uuid4())
        for key, made in ((data_key, v1.data_key(name, ledger_id)), (index_key, v1.index_key(name, ledger_id))):
            data, metadata = objects[key]
            store.write(made, data, metadata)


def v2_segments(root: str, count: int, first_id: int = 0) -> None:
    """``count`` segments of one 4 KiB block each (a block is padded to the
    streaming block size: at 1 MiB, 100,000 segments took 100 GB), ledger
    ``first_id + n // SEGMENTS_PER_LEDGER`` streamed across its segments in order."""
    store = RawStore(root)
    for number in range(count):
        ledger_id = first_id + number // SEGMENTS_PER_LEDGER
        first = (number % SEGMENTS_PER_LEDGER) * ENTRIES
        entries = [(ledger_id, first + n, bytes([n]) * 100) for n in range(ENTRIES)]
        (block,) = v2.encode_segment_blocks(iter(entries), streaming_block_size=4096)
        info = v2.ledger_info_bytes(ledger_id, last_entry_id=first + ENTRIES - 1, closed=False)
        index = v2.index_for_blocks([(ledger_id, block.row)], data_object_length=len(block.data),
                                    ledger_infos={ledger_id: info})  # fmt: skip
        name = str(uuid.uuid4())
        store.write(v2.segment_data_key(name), bytes(block.data))
        store.write(v2.segment_index_key(name), v2.encode_index(index))


MANAGED_LEDGER = "acme/prod/persistent/orders"


def mapfile_ledgers(root: str, count: int) -> None:
    """``count`` MapFile directories: the files a real MapFile offload wrote, under new names."""
    template = MemoryDriver()
    payloads = [bytes([n]) * 100 for n in range(ENTRIES)]
    metadata = v1.closed_ledger_metadata(length=100 * ENTRIES, last_entry_id=ENTRIES - 1, ctime_ms=1)
    offloader = MapFileLedgerOffloader(template)
    offloader.offload(InMemoryReadHandle(1, payloads, metadata), uuid.UUID(int=1),
                      {"ManagedLedgerName": MANAGED_LEDGER})  # fmt: skip
    offloader.close()
    files = [(info.key.rsplit("/", 1)[1], template.read(info.key), template.stat(info.key).metadata)
             for info in template.list()]  # fmt: skip
    store = RawStore(root)
    for ledger_id in range(count):
        directory = f"{MANAGED_LEDGER}/{ledger_id}-{uuid.uuid4()}"
        for name, data, meta in sorted(files, key=lambda f: f[0] == "index"):  # index last, as the offloader
            store.write(f"{directory}/{name}", data, meta)


def kafka_segments(root: str, count: int, first: int = 0) -> None:
    """``count`` committed segments over ``KAFKA_PARTITIONS`` partitions of
    one topic: a ``.log``, an ``.index`` and the manifest each (planning
    reads only the manifests), leader epoch 0 from each segment's base
    offset on, so every segment serves its own offsets. ``first``: the
    number of segments already there, which these follow."""
    store = RawStore(root)
    log, offsets = b"\0" * 2000, 100
    for number in range(first, first + count):
        partition, base = number % KAFKA_PARTITIONS, (number // KAFKA_PARTITIONS) * offsets
        tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", partition))
        segment_id = RemoteLogSegmentId(tp, uuid.uuid4().bytes.hex()[:22])
        meta = RemoteLogSegmentMetadata(segment_id, start_offset=base, end_offset=base + offsets - 1,
                                        max_timestamp_ms=1_700_000_000_000 + base, broker_id=0,
                                        event_timestamp_ms=1_700_000_000_000 + number,
                                        segment_size_in_bytes=len(log), segment_leader_epochs={0: base},
                                        state=RemoteLogSegmentState.COPY_SEGMENT_FINISHED)  # fmt: skip
        entry = RemoteLogIndexEntry(segment_id, base, base, base + offsets - 1, 0, 0, 0, len(log))
        manifest = SegmentManifest(meta, {LOG_SUFFIX: len(log), "index": 0}, (entry,))
        store.write(segment_key("", segment_id, base, LOG_SUFFIX), log)
        store.write(segment_key("", segment_id, base, "index"), b"")
        store.write(segment_key("", segment_id, base, MANIFEST_SUFFIX), encode_manifest(manifest))


def plan_pulsar(url: str) -> list[Any]:
    from offload_core.spark.pulsar_offload import plan_partitions

    return list(plan_partitions({"path": url}))


def plan_kafka(url: str) -> list[Any]:
    from offload_core.spark.kafka_remote import plan_partitions

    return list(plan_partitions({"url": url, "subscribe": "orders"}))


KINDS: dict[str, tuple[Callable[[str, int], None], Callable[[str], list[Any]]]] = {
    "v1-ledgers": (v1_ledgers, plan_pulsar),
    "v2-segments": (v2_segments, plan_pulsar),
    "mapfile-ledgers": (mapfile_ledgers, plan_pulsar),
    "kafka-segments": (kafka_segments, plan_kafka),
}


@contextlib.contextmanager
def counted_requests(latency: float = 0.0) -> Iterator[Counter[str]]:
    """Every request of every driver opened inside, by operation; with a
    ``latency`` (seconds), each request waits it first, as on a remote
    store (:class:`SlowDriver`: requests sent at once wait at once)."""
    opened: list[Any] = []
    original = PluginManager.open_driver

    def counting(self: PluginManager, url_or_name: str, **options: Any) -> Any:
        driver = original(self, url_or_name, **options)
        opened.append(driver)
        if latency and isinstance(driver, TransformingDriver):  # under the transforms: the store's own requests
            driver.inner = SlowDriver(driver.inner, latency)
        elif latency:
            driver = SlowDriver(driver, latency)
        return driver

    totals: Counter[str] = Counter()
    PluginManager.open_driver = counting  # type: ignore[method-assign]
    try:
        yield totals
    finally:
        PluginManager.open_driver = original  # type: ignore[method-assign]
        for driver in opened:
            totals.update(driver.request_counts)


def measure(kind: str, count: int, work: str, latency: float = 0.0) -> dict[str, Any]:
    build, plan = KINDS[kind]
    root = os.path.join(work, f"{kind}-{count}")
    started = time.perf_counter()
    build(root, count)
    built = time.perf_counter() - started
    url = f"file://{root}"
    plan(url)  # warm: imports, the page cache
    gc.collect()
    with counted_requests(latency) as requests:
        started = time.perf_counter()
        planned = plan(url)
        seconds = time.perf_counter() - started
    # Spark's planning worker pickles each partition on its own and sends the JVM the bytes.
    partitions, pickled = len(planned), sum(len(pickle.dumps(partition)) for partition in planned)
    del planned
    gc.collect()
    tracemalloc.start()
    plan(url)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    per = 10_000 / count
    return {"kind": kind, "objects": count, "build s": built, "partitions": partitions,
            "plan s / 10k": seconds * per, "peak MB / 10k": peak / 1e6 * per, "pickled MB / 10k": pickled / 1e6 * per,
            "GETs / object": requests["read"] / count, "lists": requests["list"],
            "other requests": sum(n for op, n in requests.items() if op not in ("read", "list"))}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,20000", help="object counts, comma-separated")
    parser.add_argument("--kinds", default=",".join(KINDS), help=f"of {', '.join(KINDS)}")
    parser.add_argument("--dir", default=None, help="where the stores are built (default: a temporary directory)")
    parser.add_argument("--latency-ms", type=float, default=0.0,
                        help="time to first byte of each request in the timed planning, as on a remote store "
                             "(default 0: the filesystem's own)")  # fmt: skip
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        columns = ["kind", "objects", "build s", "partitions", "plan s / 10k", "peak MB / 10k", "pickled MB / 10k",
                   "GETs / object", "lists", "other requests"]  # fmt: skip
        print(" | ".join(columns))
        for kind in args.kinds.split(","):
            for size in sizes:
                row = measure(kind, size, work, args.latency_ms / 1000)
                print(" | ".join(f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c]) for c in columns),
                      flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
