"""Worker processes start as an entry point of ours, never by re-importing
the caller's ``__main__``: a script without a main guard, or one read from
standard input, embeds a broker and runs once. Where no worker can start,
the broker works on its threads and says so once. A worker whose broker is
killed exits without a traceback."""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from offload_core.errors import StateError
from offload_core.managed_ledger import Broker, ManagedLedger, ReadPriority, parse_config
from offload_core.managed_ledger.streaming.segment_worker_process import _Server
from offload_core.model import Position
from tests.managed_ledger.test_offload_workers import gone

# Written as a user would, following the embedding example in docs/operators.md: no main guard.
SCRIPT = textwrap.dedent(
    """
    import os, sys
    from offload_core.managed_ledger import Broker, ReadPriority, parse_config
    from offload_core.model import Position

    print("the script runs", flush=True)
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerFsyncPolicy": "none"})
    with Broker(sys.argv[1], config) as broker:
        broker.policies.update("topic", "acme/prod/streamed", streaming_enabled=True)
        whole, streamed = broker.topic("acme/prod/whole"), broker.topic("acme/prod/streamed")
        for n in range(250):
            whole.append(b"whole %d" % n)
            streamed.append(b"streamed %d" % n)
        print("offload:", whole.offload_prefix().status)
        print("segment:", streamed.complete_current_segment().status)
        for ledger, name in ((whole, b"whole"), (streamed, b"streamed")):
            first = Position(ledger.ledgers()[0].ledger_id, 0)
            entries = ledger.read(first, 200, priority=ReadPriority.OFFLOADED_ONLY)
            print("read back:", [e.data for e in entries] == [b"%s %d" % (name, n) for n in range(200)])
        workers = [*broker.offload_workers.process_ids, broker.segment_workers.process_id]
        print("in worker processes:", len(workers) == 2 and os.getpid() not in workers and None not in workers)
    """
)

RAN_ONCE_WITH_WORKERS = ["the script runs", "offload: success", "segment: success", "read back: True",
                         "read back: True", "in worker processes: True"]  # fmt: skip


def test_a_script_without_a_main_guard_runs_once_and_its_workers_serve(tmp_path: Path) -> None:
    script = tmp_path / "produce.py"
    script.write_text(SCRIPT)
    ran = subprocess.run([sys.executable, str(script), str(tmp_path / "data")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=240)  # fmt: skip
    assert ran.stdout.splitlines() == RAN_ONCE_WITH_WORKERS, ran.stderr
    assert ran.returncode == 0 and "Traceback" not in ran.stderr and "cannot start" not in ran.stderr


def test_a_script_read_from_standard_input_runs_once_and_its_workers_serve(tmp_path: Path) -> None:
    ran = subprocess.run([sys.executable, "-", str(tmp_path / "data")], cwd=tmp_path, input=SCRIPT,
                         capture_output=True, text=True, timeout=240)  # fmt: skip
    assert ran.stdout.splitlines() == RAN_ONCE_WITH_WORKERS, ran.stderr
    assert ran.returncode == 0 and "Traceback" not in ran.stderr and "cannot start" not in ran.stderr


def offload_whole_ledgers(ledger: ManagedLedger) -> None:
    for n in range(250):
        ledger.append(b"whole %d" % n)
    assert ledger.offload_prefix().status == "success"


def stream_a_segment(ledger: ManagedLedger) -> None:
    for n in range(250):
        ledger.append(b"streamed %d" % n)
    assert ledger.complete_current_segment().status == "success"


@pytest.mark.parametrize("first", ["whole-ledger offload", "streamed segment", "start_workers"])
@pytest.mark.parametrize("fault", ["no such executable", "not a Python", "frozen application"])
def test_where_no_worker_can_start_the_broker_works_on_its_threads_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, fault: str, first: str
) -> None:
    if fault == "no such executable":
        monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    elif fault == "not a Python":
        monkeypatch.setattr(sys, "executable", shutil.which("true"))  # exits at once, having started nothing
    else:
        monkeypatch.setattr(sys, "frozen", True, raising=False)
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerFsyncPolicy": "none"})
    with caplog.at_level(logging.WARNING), Broker(tmp_path / "data", config) as broker:
        assert broker.offload_workers is not None and broker.segment_workers is not None  # workers on
        broker.policies.update("topic", "acme/prod/streamed", streaming_enabled=True)
        whole, streamed = broker.topic("acme/prod/whole"), broker.topic("acme/prod/streamed")
        if first == "start_workers":
            broker.start_workers()
        if first == "streamed segment":  # the first to need a worker
            stream_a_segment(streamed)
            offload_whole_ledgers(whole)
        else:
            offload_whole_ledgers(whole)
            stream_a_segment(streamed)
        for ledger, name in ((whole, b"whole"), (streamed, b"streamed")):
            entries = ledger.read(Position(ledger.ledgers()[0].ledger_id, 0), 200,
                                  priority=ReadPriority.OFFLOADED_ONLY)  # fmt: skip
            assert [e.data for e in entries] == [b"%s %d" % (name, n) for n in range(200)]
        assert broker.offload_workers.process_ids == [] and broker.segment_workers.process_id is None
    said = [r.getMessage() for r in caplog.records if r.name.startswith("offload_core")]
    assert len(said) == 1 and "worker processes cannot start" in said[0] and "broker's threads" in said[0]


def test_workers_leave_an_interrupt_to_the_script_and_keep_serving_its_broker(tmp_path: Path) -> None:
    """Ctrl-C in a terminal interrupts the whole process group, workers too."""
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerFsyncPolicy": "none",
                           "managedLedgerOffloadStreamingEnabled": True})  # fmt: skip
    with Broker(tmp_path / "data", config) as broker:
        assert broker.offload_workers is not None and broker.segment_workers is not None
        broker.start_workers()
        workers = [*broker.offload_workers.process_ids, broker.segment_workers.process_id]
        for pid in workers:
            os.kill(pid, signal.SIGINT)  # type: ignore[arg-type]
        broker.policies.update("topic", "acme/prod/whole", streaming_enabled=False)
        whole, streamed = broker.topic("acme/prod/whole"), broker.topic("acme/prod/streamed")
        for n in range(250):
            whole.append(b"whole %d" % n)
            streamed.append(b"streamed %d" % n)
        assert whole.offload_prefix().status == "success"
        assert streamed.complete_current_segment().status == "success"
        assert [*broker.offload_workers.process_ids, broker.segment_workers.process_id] == workers


# The broker dies (kill -9) while its segment worker uploads what a
# producer keeps appending to three streamed topics.
KILLED_WHILE_STREAMING = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from offload_core.managed_ledger import Broker, parse_config

    config = parse_config({"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerOffloadMaxBlockSizeInBytes": 4096,
                           "managedLedgerFsyncPolicy": "none", "managedLedgerOffloadStreamingEnabled": True})
    broker = Broker(sys.argv[1], config)
    topics = [broker.topic(f"acme/prod/killed-{n}") for n in range(3)]
    for topic in topics:
        for n in range(150):
            topic.append(b"x" * 300)
        topic.pump_streaming()
    broker.drain()
    assert all(topic.segments() for topic in topics)

    def produce():
        while True:
            for topic in topics:
                topic.append(b"y" * 300)

    threading.Thread(target=produce, daemon=True).start()
    print(broker.segment_workers.process_id, flush=True)
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_a_segment_worker_whose_broker_is_killed_exits_without_a_traceback(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", KILLED_WHILE_STREAMING, str(tmp_path / "data")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    # The worker shares the broker's stdout and stderr: both end once it has exited too.
    out, err = child.communicate(timeout=240)
    assert child.returncode == -signal.SIGKILL, err
    worker = int(out.split()[0])
    deadline = time.monotonic() + 30
    while not gone(worker):
        assert time.monotonic() < deadline, f"segment worker {worker} outlived its broker"
        time.sleep(0.05)
    assert "Traceback" not in err and len(err.splitlines()) <= 1, err


def test_a_segment_worker_drops_what_it_tells_a_broker_that_is_gone() -> None:
    broker_end, worker_end = multiprocessing.Pipe()
    broker_end.close()  # the broker was killed
    server = _Server(worker_end)
    server.send(("event", "offload.finished"))  # as an upload thread does: no BrokenPipeError
    server.run()  # sees the pipe's end and returns
    with pytest.raises(StateError, match="went away"):  # at once: no answer can come
        server._ask_ledger_info(1, 1, 0)
    worker_end.close()
