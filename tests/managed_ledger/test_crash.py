"""Crash tests: a real process is SIGKILLed at each step of the offload
lifecycle (and mid-append); reopening completes or cleans up, no entry is
lost, and no object or file is left that the metadata does not refer to."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.model import Position
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.offload.ledgers.verify import verify_ledger
from offload_core.plugins import open_driver
from offload_core.proto import ManagedLedgerInfo

pytestmark = pytest.mark.slow

TOPIC = "acme/prod/orders"
CONFIG = {
    "managedLedgerMaxEntriesPerLedger": 100,
    "managedLedgerOffloadMaxBlockSizeInBytes": 2048,
    "managedLedgerOffloadDeletionLagMs": 0,
    "managedLedgerFsyncPolicy": "none",
}

OFFLOADING_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from offload_core import PluginManager, hookimpl
    from offload_core.managed_ledger import Broker, parse_config

    data_dir, kind, point, config = sys.argv[1], sys.argv[2], sys.argv[3], eval(sys.argv[4])

    class Killer:
        @hookimpl
        def offload_core_on_event(self, event):
            f = event.fields
            if kind == "step" and event.kind == "offload.lifecycle" and f["step"] == point:
                os.kill(os.getpid(), signal.SIGKILL)
            if (kind == "write" and event.kind == "storage.request" and f["op"] == "write" and f["ok"]
                    and f["key"].endswith("-index") == (point == "index")):
                os.kill(os.getpid(), signal.SIGKILL)

    plugins = PluginManager()
    plugins.register(Killer())
    broker = Broker(data_dir, parse_config(config), plugin_manager=plugins)
    broker.topic("acme/prod/orders").offload_prefix()
    print("finished without being killed")
    """
)


def payload(n: int) -> bytes:
    return f"entry {n} ".encode() * (1 + n % 13)


def produce(data_dir: Path, count: int) -> None:
    with Broker(data_dir, parse_config(CONFIG)) as broker:
        ledger = broker.topic(TOPIC)
        for n in range(count):
            ledger.append(payload(n))


def check_consistent(data_dir: Path, count: int) -> Broker:
    """Reopen (recovering) and check: every entry reads back under both
    *_FIRST priorities; every object and hot file is one the metadata names."""
    broker = Broker(data_dir, parse_config(CONFIG))
    ledger = broker.topic(TOPIC)
    first = Position(ledger.ledgers()[0].ledger_id, 0)
    for priority in (ReadPriority.OFFLOADED_FIRST, ReadPriority.BOOKKEEPER_FIRST):
        assert [e.data for e in ledger.read(first, count + 10, priority=priority)] == [payload(n) for n in range(count)]
    info = ManagedLedgerInfo.FromString(broker.store.get(f"managed-ledgers/{ledger.name}").value)  # type: ignore[union-attr]
    referenced = {state.uuid for state in ledger.ledgers() if state.uuid}
    bucket = open_driver(f"file://{data_dir / 'bucket'}")
    for obj in bucket.list(""):
        parsed = v1.parse_key(obj.key)
        assert parsed is not None and parsed.uuid in referenced, f"orphan object {obj.key}"
    hot = {ledger_info.ledgerId for ledger_info in info.ledgerInfo if not ledger_info.offloadContext.bookkeeperDeleted}
    files = {int(path.stem) for path in (data_dir / "ledgers").glob("*.log")}
    assert files <= hot, f"hot files {sorted(files - hot)} belong to ledgers marked deleted"
    return broker


KILL_POINTS = [
    ("step", "prepared"),
    ("write", "data"),
    ("write", "index"),
    ("step", "offloaded"),
    ("step", "completed"),
    ("step", "hot-delete-marked"),
    ("step", "hot-deleted"),
]


@pytest.mark.parametrize(("kind", "point"), KILL_POINTS, ids=[point for _, point in KILL_POINTS])
def test_kill_at_each_offload_step(tmp_path: Path, kind: str, point: str) -> None:
    data_dir = tmp_path / "data"
    produce(data_dir, 350)
    child = subprocess.run(
        [sys.executable, "-c", OFFLOADING_CHILD, str(data_dir), kind, point, repr(CONFIG)],
        capture_output=True,
        text=True,
    )
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr

    broker = check_consistent(data_dir, 350)  # recovery on reopen
    # The killed run never recorded its outcome: it shows as interrupted, not running.
    assert broker.topic(TOPIC).offload_status().status == "interrupted"
    status = broker.topic(TOPIC).offload_prefix()  # the next run completes the work
    assert status.status == "success", status
    # Every open seals the ledger left current (as Pulsar recovers it): 100+100+100+50, all sealed.
    assert [(s.entries, s.tier) for s in broker.topic(TOPIC).ledgers()] == [(100, "offloaded")] * 3 + [
        (50, "offloaded")
    ]
    broker.close()

    broker = check_consistent(data_dir, 350)
    bucket = open_driver(f"file://{data_dir / 'bucket'}")
    ledgers = find_offloaded_ledgers(bucket)
    assert len(ledgers) == 4
    assert all(verify_ledger(bucket, ledger).ok for ledger in ledgers)
    broker.close()


APPENDING_CHILD = textwrap.dedent(
    """
    import sys
    from offload_core.managed_ledger import Broker, parse_config
    config = eval(sys.argv[2])
    broker = Broker(sys.argv[1], parse_config(config))
    ledger = broker.topic("acme/prod/orders")
    n = 0
    while True:
        position = ledger.append(f"entry {n} ".encode() * (1 + n % 13))
        print(position, flush=True)
        n += 1
    """
)


@pytest.mark.parametrize("fsync", ["none", "batch", "always"])
def test_kill_while_appending_loses_no_acknowledged_entry(tmp_path: Path, fsync: str) -> None:
    data_dir = tmp_path / "data"
    config = {**CONFIG, "managedLedgerFsyncPolicy": fsync}
    child = subprocess.Popen(
        [sys.executable, "-c", APPENDING_CHILD, str(data_dir), repr(config)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    acknowledged = [Position.parse(child.stdout.readline().strip()) for _ in range(250)]
    child.send_signal(signal.SIGKILL)
    child.wait()
    with Broker(data_dir, parse_config(config)) as broker:
        ledger = broker.topic(TOPIC)
        entries = ledger.read(acknowledged[0], 10**6)
        assert [e.data for e in entries[:250]] == [payload(n) for n in range(250)]
        assert [Position(e.ledger_id, e.entry_id) for e in entries[:250]] == acknowledged
        assert [e.data for e in entries] == [payload(n) for n in range(len(entries))]  # nothing torn served
        ledger.append(b"life goes on")
        assert ledger.read(ledger.last_position, 1)[0].data == b"life goes on"  # type: ignore[arg-type]
