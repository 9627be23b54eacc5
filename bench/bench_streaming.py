"""Streaming offload (PIP-76), measured in one run.

1. Append latency with streaming on vs off: 3 ledgers of 20,000 x 1 KB
   entries on the filesystem store (fsync off), 4 MiB blocks, 64 MB
   segments; p99 on / off, the median of seven alternated rounds (off, off
   with the other core busy, on, off again; the last gives the
   measurement's own spread) (goal: p99 with streaming within 5% of off).
   "Off, other core busy" is the floor on this 2-core machine, whose cores
   share hardware: work on the other core, as the streaming worker's, can
   slow the producer by itself (see bench_append_latency.py).
2. Offload throughput vs the limit: 64 MB of 1 KB (and of 16 KB) entries
   offered to an OffloadHandle on the filesystem driver as the managed
   ledger offers them (runs of payloads, ``offer_run``), against a raw
   driver write of the same bytes in 4 MiB parts, alternated, medians of
   nine, and the median of the nine rounds' own ratios (goal: >= 0.9 of
   the raw throughput); beside them the format's floor, the same bytes
   written as a data object and then an index object with no framing
   (Pulsar's pair: any streaming offloader writes both, the index after
   the data), and streaming without our third object, the entry offsets
   (managedLedgerOffloadEntryOffsetsEnabled = false), which is what that
   object costs. In the broker a handle runs in a segment worker, which
   keeps freed memory for its next blocks (``keep_freed_memory``); this
   process does the same before measuring.
2b. The same from the hot tier, the segment worker's whole path: each run
   located in a hot-tier ledger file (a ``RecordSpan``), read, checked
   (every record's length, entry id and CRC) and offered, a refused rest
   located and read again from the first entry not taken, as the broker
   re-offers it; against a raw copy of the ledger file's bytes to the
   store, read and written in 4 MiB parts. Section 2 offers ready-made
   payloads, so it leaves out the reading and the checks; this is what a
   broker streams at.
3. Peak buffer memory vs its bound: the same offer loop against a store
   that takes 20 ms per part (a producer faster than the store); the
   handle's peak buffered bytes must never pass its bound.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench_append_latency import busy_core_appends, percentile, timed_appends

from offload_core import open_driver
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import ManagedLedger
from offload_core.managed_ledger.hot.ledger_file import FsyncPolicy, LedgerFile
from offload_core.managed_ledger.streaming.stream_planning import run_entries
from offload_core.managed_ledger.workers.worker_memory import keep_freed_memory
from offload_core.model import ObjectInfo
from offload_core.offload import BlobStoreLedgerOffloader, OfferResult, OffloadHandle, SegmentLimits
from offload_core.storage import BytesLike, StorageDriver

BLOCK = 4 << 20
STREAM_BYTES = 64 << 20
REPEAT = 7
THROUGHPUT_REPEAT = 9


def _settings(streaming: bool) -> dict[str, object]:
    return {"managedLedgerOffloadStreamingEnabled": streaming, "maxSizePerOffloadSegmentMbytes": 64}


def append_latencies(streaming: bool) -> list[float]:
    def wrote_segments(topic: ManagedLedger) -> None:
        assert not streaming or topic.segments(), "streaming wrote no segment"

    return timed_appends(_settings(streaming), wrote_segments)


def paired_ratio(raws: list[float], streams: list[float]) -> float:
    """The median of each round's own raw / stream."""
    return statistics.median(raw / stream for raw, stream in zip(raws, streams, strict=True))


def payload_runs(total: int, size: int) -> list[list[bytes]]:
    """``total`` bytes of ``size``-byte payloads in the pump's runs."""
    payload, count = b"y" * size, total // size
    per_run = run_entries(size)
    return [[payload] * min(per_run, count - first) for first in range(0, count, per_run)]


def stream_seconds(
    driver: StorageDriver, limits: SegmentLimits, size: int = 1000, *, entry_offsets: bool = True
) -> tuple[float, int]:
    """Seconds to stream STREAM_BYTES of ``size``-byte entries and complete
    the segment; the handle's peak buffered bytes. Offered as the managed
    ledger offers them (its pump in process, its segment worker else): a
    run of payloads of one ledger at a time (``offer_run``), a refused
    rest offered again once the upload made room."""
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK, entry_offsets=entry_offsets)
    handle = offloader.streaming_offload(uuid.uuid4(), limits=limits)
    runs = payload_runs(STREAM_BYTES, size)
    started = time.perf_counter()
    entry_id = 0
    for run in runs:
        at = 0
        while at < len(run):
            taken, outcome = handle.offer_run(1, entry_id, run[at:] if at else run)
            at += taken
            entry_id += taken
            if outcome is OfferResult.FAIL_BUFFER_FULL:
                time.sleep(0.0005)
    seconds, _ = completed_seconds(driver, handle, started)
    return seconds, handle.peak_buffered_bytes


def completed_seconds(driver: StorageDriver, handle: OffloadHandle, started: float) -> tuple[float, int]:
    """Close ``handle``, wait for its segment to be complete; the seconds
    since ``started`` and the segment's last entry id. Its objects are
    deleted after timing, so that those of earlier runs do not pile up in
    the page cache and get written back in the middle of a later one."""
    handle.close()
    result = handle.result()
    seconds = time.perf_counter() - started
    assert result is not None
    driver.delete([result.data_key, result.index_key])
    return seconds, result.end_entry_id


def raw_parts(size: int) -> Iterator[bytes]:
    """``size`` bytes in BLOCK-sized parts, as a raw copy is written."""
    part = b"z" * BLOCK
    return (part[: min(BLOCK, size - offset)] for offset in range(0, size, BLOCK))


def raw_write_seconds(driver: StorageDriver, size: int) -> float:
    started = time.perf_counter()
    driver.write("raw-copy", raw_parts(size))
    seconds = time.perf_counter() - started
    driver.delete(["raw-copy"])
    return seconds


@dataclass(frozen=True)
class AppendP99s:
    """Append p99 with streaming off and on (medians), the ratio on / off
    and, measured the same way, off / off again (the measurement's own
    spread, against which a ratio near 1 is to be read), off with the other
    core busy / off (the hardware's share) and on / off with the other core
    busy (our software's own share)."""

    off: float
    on: float
    ratio: float
    spread: float
    busy_core: float
    ratio_to_busy_core: float


def append_p99s(repeat: int) -> AppendP99s:
    """Runs off, off with the other core busy, on, off again, ``repeat``
    times. Each ratio is the median of the ratios within a round, not a
    ratio of medians: this machine's speed moves between two states for
    seconds at a time (append p50 about 5.6 or about 10 us), and runs back
    to back mostly share one."""
    offs, ons, ratios, spreads, busy, to_busy = [], [], [], [], [], []
    for _ in range(repeat):
        off = percentile(append_latencies(False), 0.99)
        busy_off = percentile(busy_core_appends(_settings(False)), 0.99)
        on = percentile(append_latencies(True), 0.99)
        again = percentile(append_latencies(False), 0.99)
        offs.append(off)
        ons.append(on)
        ratios.append(on / off)
        spreads.append(again / off)
        busy.append(busy_off / off)
        to_busy.append(on / busy_off)
    median = statistics.median
    return AppendP99s(median(offs), median(ons), median(ratios), median(spreads), median(busy), median(to_busy))


def two_objects_seconds(driver: StorageDriver, size: int, index_bytes: int) -> float:
    """The format's own floor: the same bytes as a data object, then an
    index object of ``index_bytes`` written after it (Pulsar's pair: an
    index never before its data), no framing at all. What any streaming
    offloader pays beyond a raw write on this store."""
    metadata = {v1.FORMAT_VERSION_KEY: "1"}
    started = time.perf_counter()
    driver.write("floor", raw_parts(size), metadata=metadata)
    driver.write("floor-index", b"i" * index_bytes, metadata=metadata)
    seconds = time.perf_counter() - started
    driver.delete(["floor", "floor-index"])
    return seconds


@dataclass(frozen=True)
class ThroughputSeconds:
    """Medians of alternated runs: a raw write, the two-object floor, and
    streaming the same bytes, with and without the entry offsets; and the
    median of each round's raw / stream, which the disk's speed drifting
    between rounds (here a raw write takes 35 ms in one run, 60 in the
    next) moves less than a ratio of medians."""

    raw: float
    floor: float
    stream: float
    stream_without_offsets: float
    paired_ratio: float


def raw_and_stream_seconds(driver: StorageDriver, limits: SegmentLimits, size: int, repeat: int) -> ThroughputSeconds:
    """Median seconds of a raw write, the two-object floor and of streaming
    the same bytes, alternated."""
    raws, floors, streams, bare = [], [], [], []
    for _ in range(repeat):
        raws.append(raw_write_seconds(driver, STREAM_BYTES))
        floors.append(two_objects_seconds(driver, STREAM_BYTES, index_bytes=4096))
        streams.append(stream_seconds(driver, limits, size)[0])
        bare.append(stream_seconds(driver, limits, size, entry_offsets=False)[0])
    median = statistics.median
    return ThroughputSeconds(median(raws), median(floors), median(streams), median(bare), paired_ratio(raws, streams))


@contextlib.contextmanager
def hot_tier_ledger(directory: Path, size: int) -> Iterator[LedgerFile]:
    """A hot-tier ledger file of STREAM_BYTES of ``size``-byte entries,
    synced once, so that measuring finds its pages clean in the page cache
    (as a ledger streamed while it is written mostly is); closed and
    removed on leaving."""
    ledger = LedgerFile.create(directory / f"ledger-{size}", 1, fsync=FsyncPolicy.NONE)
    try:
        payload = b"h" * size
        for _ in range(STREAM_BYTES // size):
            ledger.append(payload)
        ledger.sync()
        yield ledger
    finally:
        ledger.close()
        os.unlink(ledger.path)


def stream_from_hot_tier_seconds(driver: StorageDriver, limits: SegmentLimits, ledger: LedgerFile) -> float:
    """Seconds to stream the whole of ``ledger`` and complete the segment
    the way the segment worker does (``SegmentWorker.offer``): a run of
    the pump's size located (``RecordSpan``), read and checked
    (``read_payloads``), offered; what the handle refuses is located and
    read again from the first entry it did not take."""
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=BLOCK)
    handle = offloader.streaming_offload(uuid.uuid4(), limits=limits)
    per_run = run_entries(ledger.length // ledger.entry_count)
    last = ledger.last_entry_id
    started = time.perf_counter()
    first = 0
    while first <= last:
        span = ledger.span(first, min(last, first + per_run - 1))
        taken, outcome = handle.offer_run(span.ledger_id, span.first, span.read_payloads())
        first += taken
        if outcome is OfferResult.FAIL_BUFFER_FULL:
            time.sleep(0.0005)
    seconds, end_entry_id = completed_seconds(driver, handle, started)
    assert end_entry_id == last
    return seconds


def raw_copy_seconds(driver: StorageDriver, ledger: LedgerFile) -> float:
    """Seconds to copy the ledger file's records to the store as they are,
    read and written in BLOCK-sized parts: the limit for streaming it."""
    fd = os.open(ledger.path, os.O_RDONLY)
    end = os.fstat(fd).st_size

    def parts() -> Iterator[bytes]:
        for offset in range(LedgerFile.HEADER_SIZE, end, BLOCK):
            yield os.pread(fd, min(BLOCK, end - offset), offset)

    try:
        started = time.perf_counter()
        driver.write("raw-copy", parts())
        seconds = time.perf_counter() - started
    finally:
        os.close(fd)
    driver.delete(["raw-copy"])
    return seconds


def copy_and_stream_from_hot_tier(
    driver: StorageDriver, limits: SegmentLimits, ledger: LedgerFile, repeat: int
) -> tuple[float, float, float]:
    """Medians of a raw copy of the ledger file and of streaming it,
    alternated, and the median of the rounds' own raw / stream."""
    raws, streams = [], []
    for _ in range(repeat):
        raws.append(raw_copy_seconds(driver, ledger))
        streams.append(stream_from_hot_tier_seconds(driver, limits, ledger))
    return statistics.median(raws), statistics.median(streams), paired_ratio(raws, streams)


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
    p99 = append_p99s(REPEAT)
    print(
        f"append p99, streaming off / on (medians of {REPEAT}, alternated): {1e6 * p99.off:.1f} / {1e6 * p99.on:.1f} us"
    )
    print(f"append p99 on / off: {p99.ratio:.3f} (goal <= 1.05); off / off again, the spread: {p99.spread:.3f}")
    print(f"append p99 off, other core busy / off (the hardware's share): {p99.busy_core:.3f}; "
          f"on / off, other core busy: {p99.ratio_to_busy_core:.3f}")  # fmt: skip

    keep_freed_memory()
    limits = SegmentLimits(streaming_block_size=BLOCK, max_segment_size=1 << 30, max_buffer_size=4 * BLOCK)
    with tempfile.TemporaryDirectory() as directory:
        driver = open_driver(f"file://{Path(directory) / 'bucket'}")
        for size in (1000, 16_000):
            took = raw_and_stream_seconds(driver, limits, size, THROUGHPUT_REPEAT)
            print(f"64 MB of {size} B entries: raw write {1000 * took.raw:.0f} ms, data + index objects "
                  f"{1000 * took.floor:.0f} ms, streaming offload {1000 * took.stream:.0f} ms; throughput ratio "
                  f"{took.raw / took.stream:.2f} (goal >= 0.9); the format's floor raw / two objects "
                  f"{took.raw / took.floor:.2f}; streaming / floor {took.floor / took.stream:.2f}; without the "
                  f"entry offsets {1000 * took.stream_without_offsets:.0f} ms, raw / that "
                  f"{took.raw / took.stream_without_offsets:.2f}; raw / streaming round by round "
                  f"(median) {took.paired_ratio:.2f}")  # fmt: skip
        for size in (1000, 16_000):
            with hot_tier_ledger(Path(directory), size) as ledger:
                raw, stream, paired = copy_and_stream_from_hot_tier(driver, limits, ledger, THROUGHPUT_REPEAT)
            print(f"from the hot tier, {size} B entries (read, checked, offered): raw copy {1000 * raw:.0f} ms, "
                  f"streaming offload {1000 * stream:.0f} ms; throughput ratio {raw / stream:.2f} (goal >= 0.9); "
                  f"round by round (median) {paired:.2f}")  # fmt: skip
        slow = SlowStore(driver)
        _, peak = stream_seconds(slow, limits)
        print(
            f"slow store (20 ms per part): peak buffer {peak / 2**20:.1f} MiB, bound "
            f"{limits.max_buffer_size / 2**20:.1f} MiB ({'within' if peak <= limits.max_buffer_size else 'OVER'})"
        )


if __name__ == "__main__":
    main()
