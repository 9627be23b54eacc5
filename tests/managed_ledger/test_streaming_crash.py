"""Streaming offload under SIGKILL: a real process is killed at each step
of a segment's life; reopening cleans up, streaming resumes after the last
complete segment, no entry is lost or served twice, and the store holds
exactly the segments the metadata names."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from offload_core.formats import pulsar_v2 as v2
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.model import Position
from offload_core.plugins import open_driver

pytestmark = pytest.mark.slow

TOPIC = "acme/prod/orders"
CONFIG = {
    "managedLedgerMaxEntriesPerLedger": 100,
    "managedLedgerOffloadMaxBlockSizeInBytes": 16384,
    "managedLedgerOffloadDeletionLagMs": 0,
    "managedLedgerFsyncPolicy": "none",
    "managedLedgerOffloadStreamingEnabled": True,
    "maxSizePerOffloadSegmentMbytes": 1,
}
COUNT = 1300  # about 2.6 MB: three segments of 1 MB

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from offload_core import PluginManager, hookimpl
    from offload_core.managed_ledger import Broker, parse_config

    data_dir, kind, point, nth, count, config = sys.argv[1:7]
    nth, count, config = int(nth), int(count), eval(config)
    seen = [0]

    class Killer:
        @hookimpl
        def offload_core_on_event(self, event):
            f = event.fields
            hit = (kind == "step" and event.kind == "offload.segment" and f["step"] == point) or (
                kind == "write" and event.kind == "storage.request" and f["op"] == "write" and f["ok"]
                and f["key"].endswith("-index") == (point == "index"))
            if hit:
                seen[0] += 1
                if seen[0] == nth:
                    os.kill(os.getpid(), signal.SIGKILL)

    plugins = PluginManager()
    plugins.register(Killer())
    broker = Broker(data_dir, parse_config(config), plugin_manager=plugins)
    ledger = broker.topic("acme/prod/orders")
    for n in range(count):
        ledger.append((f"entry {n} ".encode() * 200)[:2000])
    broker.drain(60)
    ledger.complete_current_segment()
    print("finished without being killed")
    """
)


def payload(n: int) -> bytes:
    return (f"entry {n} ".encode() * 200)[:2000]


KILL_POINTS = [
    ("step", "opened", 2),  # the second segment just opened (the first is complete)
    ("write", "data", 2),  # the second segment's data object is whole, its index not written
    ("write", "index", 2),  # both objects written, the metadata not completed
    ("step", "completed", 2),
    ("step", "opened", 1),
]


@pytest.mark.parametrize(("kind", "point", "nth"), KILL_POINTS, ids=[f"{p}-{n}" for _, p, n in KILL_POINTS])
def test_kill_at_each_segment_step(tmp_path: Path, kind: str, point: str, nth: int) -> None:
    data_dir = tmp_path / "data"
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(data_dir), kind, point, str(nth), str(COUNT), repr(CONFIG)],
        capture_output=True,
        text=True,
    )
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr

    with Broker(data_dir, parse_config(CONFIG)) as broker:
        ledger = broker.topic(TOPIC)
        appended = sum(state.entries for state in ledger.ledgers())
        assert appended >= 1
        assert ledger.complete_current_segment().status == "success"
        first = Position(ledger.ledgers()[0].ledger_id, 0)
        for priority in (ReadPriority.OFFLOADED_FIRST, ReadPriority.BOOKKEEPER_FIRST):
            entries = ledger.read(first, COUNT + 10, priority=priority)
            assert [e.data for e in entries] == [payload(n) for n in range(appended)]
        # Every ledger is sealed on reopen and offloaded; with no deletion
        # lag its hot copy goes too, on the broker's background threads.
        broker.drain(60)
        assert all(state.tier == "offloaded" for state in ledger.ledgers()), ledger.ledgers()
        served = ledger.read_tiered(first, COUNT + 10, priority=ReadPriority.OFFLOADED_ONLY)
        assert len(served) == appended and {e.tier for e in served} == {"offloaded"}
        referenced = {segment.uuid for segment in ledger.segments()}
        assert {s.status for s in ledger.segments()} == {"complete"}
    bucket = open_driver(f"file://{data_dir / 'bucket'}")
    stored = {parsed.uuid for obj in bucket.list("") if (parsed := v2.parse_segment_key(obj.key)) is not None}
    assert stored == referenced
    assert all(v2.parse_segment_key(obj.key) is not None for obj in bucket.list(""))
