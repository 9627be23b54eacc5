"""Where a PIP-76 segment keeps its entry offsets (issue 41 item 4): what
each place costs a cold random read, and what it costs a segment's write.

One segment (entries of 100-2,000 bytes, 4 MiB blocks) in three layouts:

* **after the blocks**: the section is the data object's last part, past
  the length the index records (Pulsar's readers stop there, and Pulsar's
  ``deleteOffloaded`` removes the data and index objects, so nothing is
  left behind);
* **third object**: the section in ``{uuid}-entry-offsets``, as segments
  were written before (Pulsar does not delete it);
* **none**: Pulsar's bytes exactly; a read walks entry headers from its
  block's start, one read buffer (1 MiB) at a time.

On a remote-like store (``SlowDriver``: 20 ms to first byte, 200 MB/s per
request), each cold random read opens the segment on a fresh handle (stats,
index, section) and then reads one entry. Reported per layout: GETs and
bytes per entry read, opening's requests, the entry read's time against
one raw ranged GET of a read buffer at random places (the limit of a read
that knows nothing), and the segment's streaming write against a raw write
of the same blocks in the same parts.

Run: ``.venv/bin/python bench/bench_entry_offsets.py`` (``--help``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid

from offload_core import BlobStoreLedgerOffloader, Entry
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.instrument import InstrumentedDriver
from offload_core.memory import MemoryDriver
from offload_core.offload import OfferResult, SegmentLimits
from offload_core.storage import StorageDriver
from offload_core.testing.faults import Latency, SlowDriver

BLOCK = 4 * 2**20
BUFFER = 2**20
LAYOUTS = ("after the blocks", "third object", "none")


def stream(driver: StorageDriver, uid: str, entries: list[bytes], *, with_offsets: bool) -> float:
    """Seconds to stream ``entries`` as one segment of ledger 1."""
    limits = SegmentLimits(streaming_block_size=BLOCK, max_segment_size=1 << 40, max_buffer_size=1 << 30)
    offloader = BlobStoreLedgerOffloader(driver, entry_offsets=with_offsets)
    started = time.perf_counter()
    handle = offloader.streaming_offload(uid, limits=limits)
    for n, payload in enumerate(entries):
        if handle.offer_entry(Entry(1, n, payload)) is not OfferResult.SUCCESS:
            raise RuntimeError(f"entry {n} was refused; raise max_buffer_size")
    handle.close()
    if handle.result(600) is None:
        raise RuntimeError("the segment was not written")
    return time.perf_counter() - started


def layouts(entries: list[bytes]) -> tuple[str, dict[str, MemoryDriver]]:
    """The same segment in each layout, one memory store each."""
    uid = str(uuid.uuid4())
    stores = {name: MemoryDriver() for name in LAYOUTS}
    stream(stores["after the blocks"], uid, entries, with_offsets=True)
    stream(stores["none"], uid, entries, with_offsets=False)
    source, data_key = stores["after the blocks"], v2.segment_data_key(uid)
    blocks = stores["none"].read(data_key)
    section = source.read(data_key, len(blocks), source.stat(data_key).size)
    before = stores["third object"]
    for key in (data_key, v2.segment_index_key(uid)):
        before.write(key, stores["none"].read(key), metadata={v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION})
    before.write(v2.segment_entry_offsets_key(uid), section, metadata={v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION})
    return uid, stores


def cold_random(
    store: MemoryDriver, uid: str, entries: list[bytes], picks: list[int], latency: float
) -> dict[str, float]:
    counted = InstrumentedDriver(SlowDriver(store, Latency(latency), bandwidth=200e6))
    reader = BlobStoreLedgerOffloader(counted, read_buffer_size=BUFFER)
    last = len(entries) - 1
    opening, gets, fetched, read_seconds = [], 0, 0, 0.0
    for entry_id in picks:
        before = counted.counts
        handle = reader.read_segment(uid, 1, last_entry_id=last)
        opened = counted.counts
        started = time.perf_counter()
        assert handle.read(entry_id, entry_id)[0].data == entries[entry_id]
        read_seconds += time.perf_counter() - started
        done = counted.counts
        handle.close()
        opening.append(opened.since(before).total)
        gets += done.since(opened).requests["read"]
        fetched += done.bytes_read - opened.bytes_read
    reader.close()
    return {
        "GETs per entry read": gets / len(picks),
        "bytes fetched per entry read": fetched / len(picks),
        "requests to open the segment": statistics.median(opening),
        "seconds reading": read_seconds,
    }


def raw_ranged_gets(store: MemoryDriver, uid: str, count: int, latency: float, rng: random.Random) -> float:
    slow = SlowDriver(store, Latency(latency), bandwidth=200e6)
    key = v2.segment_data_key(uid)
    size = store.stat(key).size
    starts = [rng.randrange(max(1, size - BUFFER)) for _ in range(count)]
    started = time.perf_counter()
    for start in starts:
        slow.read(key, start, start + BUFFER)
    return time.perf_counter() - started


def write_ratios(entries: list[bytes], latency: float, rounds: int) -> dict[str, float]:
    """Streaming the segment, with and without the section, against a raw
    write of the same blocks in the same parts; alternated, medians."""
    ours: dict[bool, list[float]] = {True: [], False: []}
    raw: list[float] = []
    _, stores = layouts(entries)
    blocks = stores["none"]
    (data_key,) = [info.key for info in blocks.list("") if not info.key.endswith("-index")]
    body = blocks.read(data_key)
    parts = [body[n : n + BLOCK] for n in range(0, len(body), BLOCK)]
    for _ in range(rounds):
        for with_offsets in (True, False):
            target = SlowDriver(MemoryDriver(), Latency(latency), bandwidth=200e6)
            ours[with_offsets].append(stream(target, str(uuid.uuid4()), entries, with_offsets=with_offsets))
        target = SlowDriver(MemoryDriver(), Latency(latency), bandwidth=200e6)
        started = time.perf_counter()
        target.write("raw", iter(parts), metadata={})
        raw.append(time.perf_counter() - started)
    base = statistics.median(raw)
    return {
        "write, section after the blocks / raw write": base / statistics.median(ours[True]),
        "write, no section / raw write": base / statistics.median(ours[False]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=40_000, help="entries of the segment")
    parser.add_argument("--reads", type=int, default=60, help="cold random reads per layout")
    parser.add_argument("--latency", type=float, default=0.02, help="seconds to first byte of the store")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the write comparison")
    args = parser.parse_args()
    rng = random.Random(41)
    entries = [rng.randbytes(rng.randrange(100, 2000)) for _ in range(args.entries)]
    uid, stores = layouts(entries)
    picks = [rng.randrange(len(entries)) for _ in range(args.reads)]
    size = stores["none"].stat(v2.segment_data_key(uid)).size
    section = stores["after the blocks"].stat(v2.segment_data_key(uid)).size - size
    print(f"segment: {len(entries)} entries, {size / 2**20:.1f} MiB of blocks, section {section} bytes "
          f"({100 * section / size:.2f}% of the data object)")  # fmt: skip
    raw = raw_ranged_gets(stores["none"], uid, len(picks), args.latency, rng)
    for name in LAYOUTS:
        figures = cold_random(stores[name], uid, entries, picks, args.latency)
        print(f"{name:>17}: GETs per entry read {figures['GETs per entry read']:.2f}, "
              f"bytes per entry read {figures['bytes fetched per entry read'] / 1024:.0f} KiB, "
              f"requests to open {figures['requests to open the segment']:.0f}, "
              f"entry read / one raw {BUFFER >> 20} MiB ranged GET (time) "
              f"{figures['seconds reading'] / raw:.2f}")  # fmt: skip
    for name, ratio in write_ratios(entries, args.latency, args.rounds).items():
        print(f"{name}: {ratio:.2f}")


if __name__ == "__main__":
    main()
