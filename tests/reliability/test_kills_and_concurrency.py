"""kill -9 at random points of append and offload, and several processes
offloading and reading one topic at once.

A killed process is reopened by the next; every acknowledged entry must
read back exactly, and the store must hold only objects the metadata
names. Concurrent readers of the bucket must never see an offloaded ledger
(data and index both present) that does not verify.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from offload_core.managed_ledger import Broker, parse_config
from offload_core.model import Position
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.offload.ledgers.verify import verify_ledger
from offload_core.plugins import open_driver
from tests.managed_ledger.test_crash import CONFIG, TOPIC, check_consistent, payload, produce
from tests.reliability.campaign import record, scaled

pytestmark = pytest.mark.slow

APPENDER = textwrap.dedent(
    """
    import sys
    from offload_core.managed_ledger import Broker, parse_config
    broker = Broker(sys.argv[1], parse_config(eval(sys.argv[2])))
    ledger = broker.topic("acme/prod/orders")
    n = int(sys.argv[3])
    while True:
        position = ledger.append(f"entry {n} ".encode() * (1 + n % 13))
        print(position, flush=True)
        n += 1
    """
)

OFFLOADER = textwrap.dedent(
    """
    import os, signal, sys
    from offload_core import PluginManager, hookimpl
    from offload_core.managed_ledger import Broker, parse_config

    die_at = int(sys.argv[3])
    seen = 0

    class Killer:
        @hookimpl
        def offload_core_on_event(self, event):
            global seen
            if event.kind in ("storage.request", "offload.lifecycle"):
                seen += 1
                if seen == die_at:
                    os.kill(os.getpid(), signal.SIGKILL)

    plugins = PluginManager()
    plugins.register(Killer())
    broker = Broker(sys.argv[1], parse_config(eval(sys.argv[2])), plugin_manager=plugins)
    broker.topic("acme/prod/orders").offload_prefix()
    print("finished", seen)
    """
)


def test_kill_anywhere_while_appending(tmp_path: Path) -> None:
    rng = random.Random(405)
    runs = scaled("kills_per_path")
    data_dir = tmp_path / "data"
    acknowledged: list[Position] = []
    for _ in range(runs):
        config = {**CONFIG, "managedLedgerFsyncPolicy": rng.choice(["none", "batch", "always"])}
        child = subprocess.Popen([sys.executable, "-c", APPENDER, str(data_dir), repr(config), str(len(acknowledged))],
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert child.stdout is not None
        for _ in range(rng.randint(1, 300)):
            acknowledged.append(Position.parse(child.stdout.readline().strip()))
        child.send_signal(signal.SIGKILL)
        child.wait()
        # A kill may land after more appends than were read from the pipe:
        # those were written but not acknowledged; they may stay. Rebase the
        # count on what survived, which must include every acknowledged one.
        with Broker(data_dir, parse_config(config)) as broker:
            ledger = broker.topic(TOPIC)
            entries = ledger.read(Position(ledger.ledgers()[0].ledger_id, 0), 10**7)
        assert [e.data for e in entries] == [payload(n) for n in range(len(entries))]
        assert len(entries) >= len(acknowledged)
        survived = {Position(e.ledger_id, e.entry_id) for e in entries}
        assert set(acknowledged) <= survived
        acknowledged = [Position(e.ledger_id, e.entry_id) for e in entries]
    record("kill -9 at a random point of append (fsync none/batch/always), then reopen", runs=runs,
           checked=len(acknowledged), losses=0, unit="acknowledged entries checked")  # fmt: skip


def test_kill_anywhere_while_offloading(tmp_path: Path) -> None:
    rng = random.Random(17)
    runs = scaled("kills_per_path")
    checked = 0
    for run in range(runs):
        data_dir = tmp_path / f"data-{run}"
        count = rng.randint(150, 450)
        produce(data_dir, count)
        die_at = rng.randint(1, 60)
        child = subprocess.run([sys.executable, "-c", OFFLOADER, str(data_dir), repr(CONFIG), str(die_at)],
                               capture_output=True, text=True)  # fmt: skip
        assert child.returncode in (0, -signal.SIGKILL), child.stderr
        broker = check_consistent(data_dir, count)
        assert broker.topic(TOPIC).offload_prefix().status == "success"
        broker.close()
        check_consistent(data_dir, count).close()
        checked += count
    record("kill -9 at a random storage request or lifecycle step of offload, then reopen and offload again",
           runs=runs, checked=checked, losses=0, unit="entries checked")  # fmt: skip


WRITER = textwrap.dedent(
    """
    import sys, time
    from offload_core.errors import StateError
    from offload_core.managed_ledger import Broker, parse_config
    data_dir, rounds, config = sys.argv[1], int(sys.argv[2]), eval(sys.argv[3])
    done = 0
    while done < rounds:
        try:
            broker = Broker(data_dir, parse_config(config))
            ledger = broker.topic("acme/prod/orders")
        except StateError:
            broker.close()
            time.sleep(0.01)  # the other writer owns the topic now
            continue
        for _ in range(60):
            ledger.append(b"x" * 50)
        ledger.offload_prefix()
        broker.close()
        done += 1
    print("rounds", done)
    """
)

READER = textwrap.dedent(
    """
    import json, os, sys
    from offload_core.errors import NotFoundError
    from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
    from offload_core.offload.ledgers.verify import verify_ledger
    from offload_core.plugins import open_driver
    bucket, stop = sys.argv[1], sys.argv[2]
    verified = bad = 0
    while not os.path.exists(stop):
        driver = open_driver("file://" + bucket, create=True)
        for ledger in find_offloaded_ledgers(driver):
            if ledger.complete:
                report = verify_ledger(driver, ledger)
                verified += 1
                if not report.ok and not all("vanished" in d.problem for d in report.defects):
                    bad += 1
                    print(json.dumps([d.problem for d in report.defects]), file=sys.stderr)
    print(json.dumps({"verified": verified, "bad": bad}))
    """
)


def test_concurrent_offloaders_and_readers_of_one_topic(tmp_path: Path) -> None:
    rounds = scaled("concurrent_rounds")
    data_dir = tmp_path / "data"
    config = {**CONFIG, "managedLedgerMaxEntriesPerLedger": 40}
    Broker(data_dir, parse_config(config)).close()
    stop = tmp_path / "stop"

    def spawn(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-c", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    readers = [spawn(READER, str(data_dir / "bucket"), str(stop)) for _ in range(2)]
    writers = [spawn(WRITER, str(data_dir), str(rounds), repr(config)) for _ in range(2)]
    for writer in writers:
        out, err = writer.communicate(timeout=600)
        assert writer.returncode == 0, err
        assert out.strip() == f"rounds {rounds}"
    time.sleep(0.2)
    stop.touch()
    results = []
    for reader in readers:
        out, err = reader.communicate(timeout=120)
        assert reader.returncode == 0, err
        results.append(json.loads(out))
    assert all(result["bad"] == 0 for result in results), results
    expected = 2 * rounds * 60
    with Broker(data_dir, parse_config(config)) as broker:
        ledger = broker.topic(TOPIC)
        entries = ledger.read(Position(ledger.ledgers()[0].ledger_id, 0), 10**6)
    assert len(entries) == expected and all(e.data == b"x" * 50 for e in entries)
    bucket = open_driver(f"file://{data_dir / 'bucket'}")
    assert all(verify_ledger(bucket, found).ok for found in find_offloaded_ledgers(bucket))
    record("2 processes appending and offloading one topic (taking turns through its lock) while 2 processes "
           "verify every offloaded ledger they see", runs=rounds, checked=expected,
           losses=sum(result["bad"] for result in results),
           unit=f"entries checked ({sum(r['verified'] for r in results)} concurrent verifications)")  # fmt: skip
