"""``spark.readStream`` over a store that grows between runs: every record
once, across restarts from the checkpoint, checked record by record."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_driver, open_offloader
from offload_core.model import Entry
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from tests.rsm.segments import numbered_segments, value, write_partition
from tests.spark.test_pulsar_offload_segments import BLOCK, entries_of, stream

pytestmark = pytest.mark.spark


def run_until_caught_up(frame: Any, out: Path, checkpoint: Path) -> list[int]:
    """One run of the query (a restart from the checkpoint after the
    first); the rows each of its micro-batches read."""
    query = (frame.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())  # fmt: skip
    query.awaitTermination()
    return [progress["numInputRows"] for progress in query.recentProgress if progress["numInputRows"]]


def test_kafka_remote_stream_reads_each_tiered_offset_once(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    logs = {}
    for name, count in (("orders-0", 3), ("orders-1", 2)):
        logs[name] = read_partition_dir(write_partition(tmp_path, name, numbered_segments(count, batches=4)))

    def tier(name: str, *numbers: int) -> None:
        tp, segments = logs[name]
        for number in numbers:
            rsm.copy_log_segment(tp, segments[number].data)

    frame = (spark.readStream.format("kafka-remote").options(url=url, prefix="tiered", subscribe="orders")
             .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "25").load())  # fmt: skip
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    tier("orders-0", 0)
    assert run_until_caught_up(frame, out, checkpoint) == [20]
    tier("orders-0", 1)
    tier("orders-1", 0, 1)  # a partition first seen now is read from its start
    batches = run_until_caught_up(frame, out, checkpoint)
    assert sum(batches) == 60 and len(batches) == 3 and max(batches) <= 25
    # A crash after the last micro-batch's offsets were logged, before it was committed (here or in the sink):
    # the restart reads that micro-batch again, with the same offsets, then what was tiered since.
    for log in (checkpoint / "commits", out / "_spark_metadata"):
        for done in (log / "3", log / ".3.crc"):  # the local file system keeps a checksum beside each file
            done.unlink(missing_ok=True)
    tier("orders-0", 2)
    assert run_until_caught_up(frame, out, checkpoint) == [12, 20]
    rows = spark.read.parquet(str(out)).collect()
    got = sorted((r.partition, r.offset, r.key, r.value, r.topic) for r in rows)
    expected = [(0, o) for o in range(60)] + [(1, o) for o in range(40)]
    assert got == [(p, o, f"key-{o}".encode(), value(o), "orders") for p, o in expected]

    other = f"file://{tmp_path / 'other'}"
    moved = spark.readStream.format("kafka-remote").options(url=other, prefix="tiered", subscribe="orders").load()
    with pytest.raises(Exception, match=f"checkpoint holds offsets of kafka-remote store {url} .prefix 'tiered'., "
                                        f"but the query reads {other}"):  # fmt: skip
        run_until_caught_up(moved, tmp_path / "out2", checkpoint)


def test_pulsar_offload_stream_reads_each_offloaded_entry_once(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    ledgers = {3: entries_of(3, 60), 5: entries_of(5, 90), 8: entries_of(8, 40)}
    offloader = open_offloader(url, max_block_size=BLOCK)
    frame = (spark.readStream.format("pulsar-offload").option("decode", "none")
             .option("maxBytesPerTrigger", str(2 * BLOCK)).load(url))  # fmt: skip
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    offloader.offload(InMemoryReadHandle(3, ledgers[3]), uuid.uuid4())
    stream(url, [Entry(5, e, d) for e, d in enumerate(ledgers[5][:50])])
    first = run_until_caught_up(frame, out, checkpoint)
    assert sum(first) == 110 and len(first) > 1
    # Ledger 5 streams on in a new segment; ledger 8 is offloaded whole.
    stream(url, [Entry(5, e, d) for e, d in enumerate(ledgers[5]) if e >= 50])
    offloader.offload(InMemoryReadHandle(8, ledgers[8]), uuid.uuid4())
    assert sum(run_until_caught_up(frame, out, checkpoint)) == 80
    assert run_until_caught_up(frame, out, checkpoint) == []  # nothing new: nothing read
    got = sorted((r.ledger_id, r.entry_id, bytes(r.payload)) for r in spark.read.parquet(str(out)).collect())
    assert got == sorted((lid, eid, data) for lid, entries in ledgers.items() for eid, data in enumerate(entries))

    moved = spark.readStream.format("pulsar-offload").load(f"file://{tmp_path / 'other'}")
    with pytest.raises(Exception, match=f"checkpoint holds offsets of pulsar-offload store {url}, but the query reads"):
        run_until_caught_up(moved, tmp_path / "out2", checkpoint)
