"""Whole-ledger offloads written by a worker process: same objects, same
lifecycle, events carried back; a worker that dies fails that offload only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.managed_ledger.lifecycle.offload_workers import WORKER_NICENESS
from offload_core.model import Position
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.offload.ledgers.verify import verify_ledger
from offload_core.plugins import open_driver
from tests.managed_ledger.conftest import EventLog

TOPIC = "acme/prod/workers"
CONFIG = {"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerOffloadMaxBlockSizeInBytes": 4096,
          "managedLedgerFsyncPolicy": "none"}  # fmt: skip


def test_a_worker_process_writes_the_objects_and_its_events_come_back(tmp_path: Path) -> None:
    with Broker(tmp_path / "data", parse_config(CONFIG)) as broker:  # plugins from entry points: workers on
        assert broker.offload_workers is not None
        listener = EventLog()
        broker.plugins.register(listener)
        ledger = broker.topic(TOPIC)
        for n in range(250):
            ledger.append(f"entry {n}".encode() * 20)
        status = ledger.offload_prefix()
        assert status.status == "success" and status.offloaded_ledgers == 2
        writes = [e for e in listener.events if e.kind == "storage.request" and e.fields["op"] == "write"]
        finished = [e for e in listener.events if e.kind == "offload.finished"]
        assert len(finished) == 2 and len(writes) == 4  # emitted in the worker, seen here
        pids = broker.offload_workers.process_ids
        assert pids and os.getpid() not in pids
        for pid in pids:  # background work, below the producers' priority
            assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, os.getpriority(os.PRIO_PROCESS, 0)
                                                               + WORKER_NICENESS)  # fmt: skip
        entries = ledger.read(Position(ledger.ledgers()[0].ledger_id, 0), 200, priority=ReadPriority.OFFLOADED_ONLY)
        assert [e.data for e in entries] == [f"entry {n}".encode() * 20 for n in range(200)]
    bucket = open_driver(f"file://{tmp_path / 'data' / 'bucket'}")
    assert all(verify_ledger(bucket, found).ok for found in find_offloaded_ledgers(bucket))


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_worker_that_dies_fails_that_offload_and_the_next_one_works(tmp_path: Path) -> None:
    with Broker(tmp_path / "data", parse_config(CONFIG)) as broker:
        workers = broker.offload_workers
        assert workers is not None
        ledger = broker.topic(TOPIC)
        for _ in range(150):
            ledger.append(b"x" * 100)
        assert ledger.offload_prefix().status == "success"  # starts the worker
        for pid in workers.process_ids:  # kill -9 the worker
            os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            ledger.append(b"y" * 100)
        failed = ledger.offload_prefix()
        assert failed.status == "error" and "died" in (failed.error or "")
        assert ledger.unfinished_offloads() == []  # abandoned: no uid left, no objects
        assert ledger.offload_prefix().status == "success"  # fresh workers
        assert [s.tier for s in ledger.ledgers()][:2] == ["hot+offloaded"] * 2


KILLED_BROKER = textwrap.dedent(
    """
    import os, signal, sys
    from offload_core.managed_ledger import Broker, parse_config

    broker = Broker(sys.argv[1], parse_config({}))  # plugins from entry points: workers on
    broker.start_workers()
    pids = broker.offload_workers.process_ids + [broker.segment_workers.process_id]
    print(" ".join(map(str, pids)), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status  # exited; whoever adopted it has not reaped it yet


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_workers_exit_when_the_broker_is_killed(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", KILLED_BROKER, str(tmp_path / "data")],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None
    pids = [int(pid) for pid in child.stdout.readline().split()]
    assert child.wait(60) == -signal.SIGKILL and len(pids) == 2
    deadline = time.monotonic() + 30
    while not all(gone(pid) for pid in pids):
        assert time.monotonic() < deadline, f"worker processes {pids} outlived their broker"
        time.sleep(0.05)
    child.stdout.close()
