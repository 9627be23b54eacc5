"""The paths issue 37's trials broke, at the campaign's scale: a plain
script without a main guard embedding a broker with worker processes;
streaming through a store that holds its parts back and lets them go
(room notices); chunks moved between transformed objects; and the files
a broker killed while streaming leaves, swept when the topic reopens."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from offload_core.errors import FormatError
from offload_core.managed_ledger import Broker, ReadPriority, parse_config
from offload_core.memory import MemoryDriver
from offload_core.model import Position
from offload_core.plugins import open_driver
from tests.managed_ledger.test_streaming_room_model import RoomModel
from tests.managed_ledger.test_worker_processes import RAN_ONCE_WITH_WORKERS, SCRIPT
from tests.reliability import held_uploads
from tests.reliability.campaign import record, scaled
from tests.test_chunk_binding import CHAINS, driver, move_chunk

pytestmark = pytest.mark.slow

REPOSITORY = Path(__file__).parents[2]
# How long a broker may stream without its store holding an upload open before the test gives up on it.
HANG_SECONDS = 300.0


def test_plain_scripts_embed_a_broker_with_workers_and_run_once(tmp_path: Path) -> None:
    runs = scaled("embedding_runs")
    script = tmp_path / "produce.py"
    script.write_text(SCRIPT)
    for run in range(runs):
        data_dir = str(tmp_path / f"data-{run}")
        how = [str(script), data_dir] if run % 2 == 0 else ["-", data_dir]  # a file, or standard input
        ran = subprocess.run([sys.executable, *how], cwd=tmp_path, input=None if run % 2 == 0 else SCRIPT,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
        assert ran.stdout.splitlines() == RAN_ONCE_WITH_WORKERS, ran.stderr
        assert ran.returncode == 0 and "Traceback" not in ran.stderr
    record("a script without a main guard (as a file and from standard input) embeds a broker, offloads and "
           "streams in worker processes, reads back, and runs once", runs=runs, checked=400 * runs, losses=0,
           unit="entries read back")  # fmt: skip


def test_streaming_through_a_store_that_stops_and_starts() -> None:
    RoomModel.compared[0] = 0
    examples = scaled("room_model_examples")
    run_state_machine_as_test(RoomModel, settings=settings(
        max_examples=examples, stateful_step_count=15, deadline=None, derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]))  # fmt: skip
    assert RoomModel.compared[0] > 0
    record("streaming through a store that holds its parts back and lets them go (room notices): appends, "
           "stops, restarts and completions in any order; no stall, every entry read back once (and sealed "
           "ledgers from their segments alone)", runs=examples, checked=RoomModel.compared[0], losses=0,
           unit="entry reads compared")  # fmt: skip


def test_moved_chunks_are_refused_under_every_chain() -> None:
    rng = random.Random(37)
    moves = scaled("chunk_moves")
    wrong = 0
    for _ in range(moves):
        chain = rng.choice(CHAINS)
        chunk_size = rng.randint(1, 400)
        inner = MemoryDriver()
        writer = driver(inner, chain, chunk_size)
        target, source = rng.randbytes(rng.randint(1, 2000)), rng.randbytes(rng.randint(1, 2000))
        writer.write("topic-a/object", [target], metadata={})
        writer.write("topic-b/object", [source], metadata={})
        move_chunk(inner, "topic-b/object", rng.randrange(-(-len(source) // chunk_size)), "topic-a/object",
                   rng.randrange(-(-len(target) // chunk_size)))  # fmt: skip
        try:
            driver(inner, "").read("topic-a/object")
        except FormatError as exc:
            assert "topic-a/object" in str(exc), exc
        else:
            wrong += 1
    assert wrong == 0
    record("a chunk copied from another transformed object (every chain, zstd alone included; random sizes, "
           "positions and contents)", runs=moves, checked=moves, losses=wrong, unit="moved chunks read")  # fmt: skip


STREAMER = textwrap.dedent(
    """
    import os, sys, time
    from offload_core.managed_ledger import Broker, parse_config
    broker = Broker(sys.argv[1], parse_config(eval(sys.argv[2])))
    ledger = broker.topic("acme/prod/leftovers")
    n = 0
    while True:
        position = ledger.append((f"entry {n} ".encode() * 300)[: 500 + n % 3000])
        os.write(1, f"{position}\\n".encode())  # a line in one write: whole on the pipe the worker's store writes to
        n += 1
        if n % 20 == 0:
            time.sleep(0.01)  # about 4 MB a second: segments upload while the producer goes on
    """
)
STREAMING = {"managedLedgerMaxEntriesPerLedger": 400, "managedLedgerOffloadMaxBlockSizeInBytes": 64 << 10,
             "managedLedgerFsyncPolicy": "none", "managedLedgerOffloadStreamingEnabled": True,
             "maxSizePerOffloadSegmentMbytes": 2, "retentionCheckIntervalInSeconds": 0}  # fmt: skip


def streaming_to(bucket: Path) -> dict[str, object]:
    """STREAMING through the store that can hold an upload open (see :mod:`.held_uploads`)."""
    return {**STREAMING, "managedLedgerOffloadDriver": f"{held_uploads.SCHEME}://{bucket}"}


def streamed_payload(n: int) -> bytes:
    return (f"entry {n} ".encode() * 300)[: 500 + n % 3000]


def session_processes(session: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == session and fields[0] not in ("Z", "X"):
            found.append(int(stat.parent.name))
    return found


def install_held_uploads(site: Path) -> None:
    """Install :mod:`.held_uploads` under ``site`` as a distribution whose
    entry point the broker's processes (its workers too) load."""
    info = site / "offload_test_held_uploads-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: offload-test-held-uploads\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[offload_core.drivers]\n{held_uploads.SCHEME} = {held_uploads.__name__}\n")


def test_a_broker_killed_while_streaming_leaves_nothing_once_reopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(4)
    runs = scaled("kills_per_path")
    checked = leftovers_seen = 0
    site = tmp_path / "site"
    install_held_uploads(site)
    monkeypatch.syspath_prepend(str(site))  # this process reopens the store through the plugin too
    child_path = os.pathsep.join([str(site), str(REPOSITORY), os.environ.get("PYTHONPATH", "")])
    for run in range(runs):
        data_dir = tmp_path / f"data-{run}"
        config = streaming_to(data_dir / "bucket")
        # The store holds the hold-th segment upload open until the broker
        # is gone and says so: the kill lands with that upload open, after
        # 0, 1 or 2 segments were completed.
        hold = rng.randint(1, 3)
        env = {**os.environ, "PYTHONPATH": child_path, held_uploads.HOLD_UPLOAD: str(hold)}
        child = subprocess.Popen([sys.executable, "-c", STREAMER, str(data_dir), repr(config)],
                                 stdout=subprocess.PIPE, text=True, start_new_session=True, env=env)  # fmt: skip
        assert child.stdout is not None
        # Only if the store never holds an upload (a plugin that fails to
        # load, say) is the broker stopped here, so that the test fails
        # rather than waits for ever; the kill itself waits on the store.
        hung = threading.Timer(HANG_SECONDS, child.kill)
        hung.start()
        acknowledged: list[Position] = []
        for line in child.stdout:
            if line.rstrip("\n") == held_uploads.HELD:
                break
            acknowledged.append(Position.parse(line.strip()))
        else:
            raise AssertionError(f"the broker ended (status {child.wait()}) before its store held an upload open")
        hung.cancel()
        if run % 2:
            os.killpg(child.pid, signal.SIGKILL)  # the broker and its workers at once, as a machine crash
        else:
            child.send_signal(signal.SIGKILL)  # the broker alone: its workers see the link end and stop
        child.wait()
        deadline = time.monotonic() + 60
        while session_processes(child.pid):
            assert time.monotonic() < deadline, "a worker outlived its killed broker"
            time.sleep(0.05)
        bucket = open_driver(f"file://{data_dir / 'bucket'}")
        left = [t for t in bucket.list_temporaries() if not t.path.endswith(".owner")]
        # Killed with its broker, the worker cannot clean up: the held upload's file is there to sweep.
        assert left or not run % 2, "the held upload left no temporary file though its worker was killed"
        leftovers_seen += len(left)
        with Broker(data_dir, parse_config(config)) as broker:
            ledger = broker.topic("acme/prod/leftovers")  # opening sweeps what the killed run left
            assert not [t for t in bucket.list_temporaries() if not t.held], "left behind after reopening"
            first = Position(ledger.ledgers()[0].ledger_id, 0)
            entries = ledger.read(first, 10**7, priority=ReadPriority.OFFLOADED_FIRST)
            assert [e.data for e in entries] == [streamed_payload(n) for n in range(len(entries))]
            assert set(acknowledged) <= {Position(e.ledger_id, e.entry_id) for e in entries}
            assert ledger.complete_current_segment().status == "success"
            assert {s.status for s in ledger.segments()} == {"complete"}
            checked += len(acknowledged)
        assert not [t for t in bucket.list_temporaries() if not t.held]
    record(f"kill -9 of a broker streaming with worker processes (alone, or with its workers), then reopen: "
           f"the killed run's files swept ({leftovers_seen} temporary files after the kills), every acknowledged "
           "entry reads back", runs=runs, checked=checked, losses=0, unit="acknowledged entries checked")  # fmt: skip
