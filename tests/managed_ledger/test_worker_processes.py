"""A segment worker whose broker is killed exits without a traceback:
what it would tell the broker is dropped once the broker is gone."""

from __future__ import annotations

import multiprocessing
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from offload_core.errors import StateError
from offload_core.managed_ledger.segment_worker_process import _Server
from tests.managed_ledger.test_offload_workers import gone

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
