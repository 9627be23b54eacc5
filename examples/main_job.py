"""The main job: a topic on the embedded broker, offloaded and read back.

1. Creates topic ``demo/orders/events`` in ``<data-dir>`` and produces
   110,000 order events across several ledgers (progress bar).
2. Offloads every sealed ledger to the embedded default object store, a
   local directory (``<data-dir>/bucket``), with Pulsar-compatible objects.
3. Reads the whole topic back under each of the four tiered read
   priorities, first while the hot copies are still kept (deletion lag),
   then after they are deleted, checking every byte.
   One sealed ledger is also copied to Pulsar's other offloader's layout, a
   Hadoop MapFile (``managedLedgerOffloadDriver = "filesystem"``) in
   ``<data-dir>/hadoop``, and read back (one line).
4. Prints where each read was served from and how many storage requests it
   cost.
5. Streaming offload (PIP-76): a second topic, ``demo/orders/stream``, with
   streaming on. Its entries reach the store in segments while they are
   written, the current ledger still open; the topic is then read back under
   each priority.
6. Scrapes the broker's Prometheus endpoint (the offload-plugin-prometheus
   plugin, served on a free port) and prints an excerpt.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path

import click

from offload_core import BlobStoreLedgerOffloader, Event, OffloadError, hookimpl, open_driver
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.managed_ledger.managed_ledger import ManagedLedger
from offload_core.model import Position
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader

TOPIC = "demo/orders/events"
STREAM_TOPIC = "demo/orders/stream"
BATCH = 5000
METRICS_PLUGIN = importlib.util.find_spec("offload_plugin_prometheus") is not None


def event(n: int) -> bytes:
    """A deterministic, realistic-looking message (about 150-400 bytes)."""
    record = {
        "order_id": f"ord-{n:08d}",
        "customer": f"cust-{(n * 7919) % 50_000:05d}",
        "items": [{"sku": f"sku-{(n + i) % 997:04d}", "qty": 1 + (n + i) % 4} for i in range(1 + n % 5)],
        "total_cents": (n * 137) % 100_000,
        "ts": 1_700_000_000_000 + n * 13,
    }
    return json.dumps(record).encode()


class RequestCounter:
    """Counts storage requests through the broker's event hook."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    @hookimpl
    def offload_core_on_event(self, event: Event) -> None:
        if event.kind == "storage.request":
            self.counts.update(event.fields["requests_by_op"])


def read_everything(
    broker: Broker, priority: ReadPriority, total: int, counter: RequestCounter, topic: str = TOPIC
) -> str:
    """Read the topic from its first entry; one table row."""
    ledger = broker.topic(topic)
    counter.counts.clear()
    tiers: Counter[str] = Counter()
    position = Position(ledger.ledgers()[0].ledger_id, 0)
    seen = 0
    outcome = ""
    started = time.perf_counter()
    try:
        while seen < total:
            batch = ledger.read_tiered(position, BATCH, priority=priority)
            for tiered in batch:
                if tiered.entry.data != event(seen):
                    raise SystemExit(f"entry {seen} read back wrong under {priority.name}")
                tiers[tiered.tier] += 1
                seen += 1
            last = batch[-1].entry
            position = Position(last.ledger_id, last.entry_id + 1)
        outcome = f"all {seen} entries byte-identical"
    except OffloadError as exc:
        outcome = f"then raises, as it must: {str(exc).split(';')[0]}"
    elapsed = time.perf_counter() - started
    return (
        f"  {priority.name:<17} {tiers['hot']:>8} {tiers['offloaded']:>10} {counter.counts['read']:>6}"
        f" {counter.counts['stat']:>6} {1000 * elapsed:>8.0f}   {outcome}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="offload-data")
    parser.add_argument("--messages", type=int, default=110_000)
    args = parser.parse_args()

    data_dir = Path(args.data_dir).resolve() / "main-job"
    shutil.rmtree(data_dir, ignore_errors=True)
    config = parse_config(
        {
            "managedLedgerMaxEntriesPerLedger": 20_000,
            "managedLedgerOffloadMaxBlockSizeInBytes": 8 * 2**20,
            "managedLedgerOffloadReadBufferSizeInBytes": 2**20,
            "managedLedgerOffloadDeletionLagMs": 3_600_000,
            **({"managedLedgerOffloadMetricsPort": 0} if METRICS_PLUGIN else {}),
        }
    )
    counter = RequestCounter()
    with Broker(data_dir, config) as broker:
        broker.plugins.register(counter)
        ledger = broker.topic(TOPIC)
        with click.progressbar(range(args.messages), label=f"producing {args.messages} messages") as numbers:
            for n in numbers:
                ledger.append(event(n))
        sealed = [s for s in ledger.ledgers() if s.sealed]
        print(
            f"{TOPIC}: {len(ledger.ledgers())} ledgers ({len(sealed)} sealed), "
            f"{sum(s.size for s in ledger.ledgers()) / 1e6:.1f} MB in the hot tier at {data_dir / 'ledgers'}"
        )

        counter.counts.clear()
        with click.progressbar(length=len(sealed), label=f"offloading {len(sealed)} sealed ledgers") as bar:

            class Progress:
                @hookimpl
                def offload_core_on_event(self, event: Event) -> None:
                    if event.kind == "offload.lifecycle" and event.fields["step"] == "completed":
                        bar.update(1)

            broker.plugins.register(Progress())
            status = ledger.offload_prefix()
        print(
            f"offload: {status.status}, {status.offloaded_ledgers} ledgers to {data_dir / 'bucket'} "
            f"({sum(counter.counts.values())} storage requests); first unoffloaded position: "
            f"{status.first_unoffloaded}"
        )
        print(mapfile_copy(ledger, data_dir))

        header = f"  {'priority':<17} {'hot':>8} {'offloaded':>10} {'GETs':>6} {'stats':>6} {'ms':>8}"
        print("\nPhase 1: offloaded, hot copies kept (deletion lag 1 h). Entries served per tier, storage requests:")
        print(header)
        for priority in ReadPriority:
            print(read_everything(broker, priority, args.messages, counter))

        broker.policies.update("namespace", "demo/orders", deletion_lag_ms=0)
        deleted = ledger.delete_hot_copies_past_lag()
        print(f"\nPhase 2: hot copies of {len(deleted)} offloaded ledgers deleted (lag set to 0 for the namespace):")
        print(header)
        for priority in ReadPriority:
            print(read_everything(broker, priority, args.messages, counter))
        print("\nThe current (unsealed) ledger is always served hot; OFFLOADED_ONLY refuses it.")
        stream(broker, counter, args.messages // 4, header)
        print(
            "Look around (each command opens the topic, and an open seals the ledger the last owner left "
            "current, as a Pulsar broker taking over a topic does: the ledgers still being written above show "
            "as sealed there):"
        )
        print(f"             .venv/bin/offload topics stats {TOPIC} --data-dir {data_dir}")
        print(f"             .venv/bin/offload topics stats {STREAM_TOPIC} --data-dir {data_dir}")
        print(f"             .venv/bin/offload segments ls file://{data_dir / 'bucket'}")
        if broker.metrics_server is not None:
            print_metrics_excerpt(broker.metrics_server.url)
    return None


def mapfile_copy(ledger: ManagedLedger, data_dir: Path) -> str:
    """Pulsar's file-system offloader beside the blob store: the first
    offloaded ledger, read from its PIP-17 objects, written as a Hadoop
    MapFile (Pulsar's shipped profile: BLOCK, zlib) and read back; one line."""
    first = next((s for s in ledger.ledgers() if s.tier != "hot" and s.uuid is not None), None)
    if first is None or first.uuid is None:  # too few messages (--messages) for a ledger to be offloaded
        return "file-system offloader (Hadoop MapFile): no ledger offloaded yet to copy"
    blob = BlobStoreLedgerOffloader(open_driver(f"file://{data_dir / 'bucket'}"))
    mapfile = MapFileLedgerOffloader(open_driver(f"file://{data_dir / 'hadoop'}"))
    source = blob.read_offloaded(first.ledger_id, first.uuid)
    started = time.perf_counter()
    result = mapfile.offload(source, first.uuid, {"ManagedLedgerName": ledger.name})
    handle = mapfile.read_offloaded(first.ledger_id, first.uuid, result.driver_metadata)
    base = sum(s.entries for s in ledger.ledgers() if s.ledger_id < first.ledger_id)
    for entry in handle.read(0, handle.last_entry_id):
        if entry.data != event(base + entry.entry_id):
            raise SystemExit(f"MapFile ledger {first.ledger_id}: entry {entry.entry_id} read back wrong")
    entries, elapsed = handle.last_entry_id + 1, time.perf_counter() - started
    for closing in (source, handle, blob, mapfile):
        closing.close()
    return (f"file-system offloader (Hadoop MapFile): ledger {first.ledger_id} copied to {data_dir / 'hadoop'} "
            f"({result.data_object_length / 1e6:.1f} MB, BLOCK zlib) and read back, {entries} entries "
            f"byte-identical ({1000 * elapsed:.0f} ms)")  # fmt: skip


def stream(broker: Broker, counter: RequestCounter, messages: int, header: str) -> None:
    """Phase 3: a topic with streaming offload on (1 MiB blocks, 2 MB segments)."""
    broker.policies.update("topic", STREAM_TOPIC, streaming_enabled=True, max_block_size=2**20,
                           segment_max_size_mb=2)  # fmt: skip
    ledger = broker.topic(STREAM_TOPIC)
    with click.progressbar(range(messages), label=f"producing {messages} messages to {STREAM_TOPIC}") as numbers:
        for n in numbers:
            ledger.append(event(n))
    broker.drain()
    current = ledger.ledgers()[-1]
    print(f"\nPhase 3: streaming offload (PIP-76) on {STREAM_TOPIC}; ledger {current.ledger_id} is still open, "
          f"being written ({current.entries} entries; the next open of the topic seals it). Segments in the store "
          "already:")  # fmt: skip
    for segment in ledger.segments(sizes=True):
        held = ", ".join(f"ledger {lid} entries {first}..{'' if end is None else end}"
                         for lid, first, end in segment.ledgers)  # fmt: skip
        size = f"{segment.bytes / 1e6:.1f} MB" if segment.bytes else "being written"
        print(f"  {segment.uuid}  {segment.status:<9} {size:>13}  {held}")
    status = ledger.offload_prefix()
    print(f"offload (closes and completes the open segment): {status.status}; "
          f"{len(ledger.segments())} segments hold every entry written so far. Sealed ledgers streamed whole count "
          "as offloaded (the namespace's deletion lag is 0 since phase 2: their hot copies are gone):")  # fmt: skip
    print(header)
    for priority in ReadPriority:
        print(read_everything(broker, priority, messages, counter, STREAM_TOPIC))


EXCERPT = ("brk_ledgeroffloader_offload_bytes_total", "offload_core_offload_runs_total",
           "offload_core_read_entries_total", "offload_core_storage_requests_total")  # fmt: skip


def print_metrics_excerpt(url: str) -> None:
    """What a Prometheus server scraping the broker would see (an excerpt)."""
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    print(f"\nMetrics, scraped from {url} (excerpt):")
    for line in text.splitlines():
        if line.startswith(EXCERPT) and not line.endswith(" 0.0"):
            print(f"  {line}")


if __name__ == "__main__":
    sys.exit(main())
