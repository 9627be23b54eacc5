"""The files killed writers leave in the broker's store: a segment worker
killed with SIGKILL mid-segment leaves its upload's temporary file, which
``offload ledgers sweep`` and the broker's maintenance remove (its run has
provably ended); a file whose writer cannot be told is removed once it is
older than ``managedLedgerOffloadLeftoverGraceSeconds`` by the broker's
clock; a live writer's file is never removed, however old; and files that
a plugin's own writer keeps are swept by the same rule."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from offload_core import PluginManager, hookimpl
from offload_core.managed_ledger import Broker, parse_config
from offload_core.model import Temporary
from offload_core.storage import StorageDriver
from tests.managed_ledger.conftest import Clock

TOPIC = "acme/prod/leftovers"
STREAMING = {"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerOffloadMaxBlockSizeInBytes": 4096,
             "managedLedgerFsyncPolicy": "none", "managedLedgerOffloadStreamingEnabled": True,
             "maxSizePerOffloadSegmentMbytes": 1, "retentionCheckIntervalInSeconds": 0}  # fmt: skip
HOUR = 3600.0


def payload(n: int) -> bytes:
    return f"entry {n} ".encode() * 30


def offload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True)


def wait_until_dead(pid: int) -> None:
    """Until every thread of the process has exited (the process a zombie,
    or gone): only then are its descriptors, and the locks they held,
    released. Its first thread turns zombie while the others may still be
    exiting, so each is waited for."""
    deadline = time.monotonic() + 30
    while not all(state in ("Z", "X", None) for state in thread_states(pid)):
        assert time.monotonic() < deadline, f"process {pid} outlived SIGKILL"
        time.sleep(0.01)


def thread_states(pid: int) -> list[str | None]:
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return []
    states: list[str | None] = []
    for thread in threads:
        try:
            states.append((thread / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except (FileNotFoundError, ProcessLookupError):
            states.append(None)  # exited since the listing
    return states


def lock_holders(paths: Iterable[Path]) -> list[str]:
    """Each lock ``/proc/locks`` shows on one of ``paths`` and the command
    line of the process holding it: what to know when a sweep kept a file
    its killed writer should have left unlocked."""
    inodes = {path.stat().st_ino: path.name for path in paths if path.exists()}
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    held = []
    for line in lines:
        fields = [field for field in line.split() if field != "->"]  # "->": a waiter, listed after the holder
        if len(fields) < 6 or int(fields[5].rsplit(":", 1)[1]) not in inodes:
            continue
        pid = fields[4]
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            command = "(gone)"
        held.append(f"{inodes[int(fields[5].rsplit(':', 1)[1])]}: {' '.join(fields[1:4])} by {pid} {command}")
    return held


def clock_now() -> Clock:
    clock = Clock()
    clock.now = time.time()
    return clock


def kill_the_worker_mid_segment(broker: Broker) -> set[Path]:
    """Stream a segment in the worker process, SIGKILL it while the
    segment's upload is open; the files it left in ``.offload-tmp``."""
    ledger = broker.topic(TOPIC)
    for n in range(150):
        ledger.append(payload(n))
    broker.drain()
    ledger.pump_streaming()
    broker.drain()
    assert [s.status for s in ledger.segments()] == ["assigned"]  # its upload open in the worker
    tmp = broker.data_dir / "bucket" / ".offload-tmp"
    deadline = time.monotonic() + 30
    while not any(path.suffix == "" and path.stat().st_size for path in (tmp.iterdir() if tmp.exists() else ())):
        assert time.monotonic() < deadline, "the worker never started the segment's upload"
        time.sleep(0.01)
    written = set(tmp.iterdir())
    workers = broker.segment_workers
    assert workers is not None
    killed = workers.process_id
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    wait_until_dead(killed)
    assert "" in {path.suffix for path in written}, written  # the upload (and its owner's marker)
    assert all(path.exists() for path in written)
    assert sum(path.stat().st_size for path in written) > 0
    return written


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_offload_ledgers_sweep_removes_a_killed_segment_workers_upload(tmp_path: Path) -> None:
    with Broker(tmp_path / "data", parse_config(STREAMING)) as broker:  # plugins from entry points: workers on
        left = kill_the_worker_mid_segment(broker)
        swept = offload("ledgers", "sweep", f"file://{broker.data_dir / 'bucket'}")
        assert swept.returncode == 0, swept.stderr
        assert not [path for path in left if path.exists()], swept.stdout
        assert f"{len(left)} leftover file(s) of killed writers" in swept.stderr
        # The segment the worker had open is retried from the hot tier.
        ledger = broker.topic(TOPIC)
        for _ in range(3):
            if ledger.complete_current_segment().status == "success":
                break
        assert {s.status for s in ledger.segments()} == {"complete"}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_the_brokers_maintenance_removes_a_killed_segment_workers_upload(tmp_path: Path) -> None:
    clock = clock_now()
    with Broker(tmp_path / "data", parse_config(STREAMING), clock=clock) as broker:
        left = kill_the_worker_mid_segment(broker)
        clock.advance(HOUR + 1)
        broker.topic(TOPIC).run_maintenance()
        kept = [path for path in left if path.exists()]
        assert not kept, f"{kept}; their locks: {lock_holders(kept)}"


MAINTENANCE = {"managedLedgerMaxEntriesPerLedger": 100, "managedLedgerOffloadMaxBlockSizeInBytes": 4096,
               "retentionCheckIntervalInSeconds": 0, "managedLedgerOffloadWorkerProcesses": 0,
               "managedLedgerOffloadLeftoverGraceSeconds": 600}  # fmt: skip


def test_maintenance_removes_a_file_of_an_unknown_writer_after_the_grace_period_by_its_clock(tmp_path: Path) -> None:
    clock = clock_now()
    with Broker(tmp_path / "data", parse_config(MAINTENANCE), clock=clock) as broker:
        ledger = broker.topic(TOPIC)
        tmp = broker.data_dir / "bucket" / ".offload-tmp"
        tmp.mkdir(parents=True)
        # Named as an earlier version named its uploads: no owner marker
        # tells whether its writer lives, so only its age can.
        unknown = tmp / ("ab" * 16)
        unknown.write_bytes(b"x" * 1000)
        ledger.run_maintenance()
        clock.advance(599)
        ledger.run_maintenance()
        assert unknown.exists()  # younger than the grace period by the broker's clock
        clock.advance(2)
        ledger.run_maintenance()
        assert not unknown.exists()


WRITER = textwrap.dedent(
    """
    import sys
    from offload_driver_filesystem import FilesystemDriver

    def parts():
        yield b"x" * 4096
        print("writing", flush=True)
        sys.stdin.readline()  # until the test says finish
        yield b"y"

    driver = FilesystemDriver(sys.argv[1])
    driver.write("late/object", parts(), metadata={"k": "v"})
    driver.close()
    print("written", flush=True)
    """
)


def test_a_live_writers_file_is_never_removed_however_old(tmp_path: Path) -> None:
    bucket = tmp_path / "data" / "bucket"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(bucket)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline() == "writing\n"
        live = sorted((bucket / ".offload-tmp").iterdir())
        assert "" in {path.suffix for path in live}, live  # the upload (and its owner's marker)
        for path in live:
            os.utime(path, (time.time() - 10 * HOUR, time.time() - 10 * HOUR))
        clock = clock_now()
        with Broker(tmp_path / "data", parse_config(MAINTENANCE), clock=clock) as broker:
            clock.advance(10 * HOUR)
            broker.topic(TOPIC).run_maintenance()
        swept = offload("ledgers", "sweep", f"file://{bucket}", "--older-than", "0")
        assert swept.returncode == 0 and "0 leftover file(s)" in swept.stderr, swept.stdout + swept.stderr
        assert all(path.exists() for path in live)
        writer.stdin.write("finish\n")
        writer.stdin.flush()
        assert writer.stdout.readline() == "written\n"
    finally:
        writer.kill()
        writer.wait()
    assert (bucket / "late" / "object").read_bytes() == b"x" * 4096 + b"y"
    assert not list((bucket / ".offload-tmp").iterdir())


class MapFileScratch:
    """A plugin writer's own scratch files beside the store (as a Hadoop
    MapFile writer keeps ``_temporary`` files), swept through the hook."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def list_temporaries(self) -> Iterator[Temporary]:
        for path in sorted(self.directory.iterdir()):
            yield Temporary(f"_temporary/{path.name}", path.stat().st_size, path.stat().st_mtime)

    def remove_temporaries(self, temporaries: Iterable[Temporary], *, dry_run: bool = False) -> Sequence[Temporary]:
        chosen = list(temporaries)
        if not dry_run:
            for temporary in chosen:
                (self.directory / temporary.path.removeprefix("_temporary/")).unlink()
        return chosen


class MapFilePlugin:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @hookimpl
    def offload_core_leftover_sources(self, driver: StorageDriver) -> Any:
        return [MapFileScratch(self.directory)]


def test_a_plugins_own_scratch_files_are_swept_by_the_same_rule(tmp_path: Path) -> None:
    scratch = tmp_path / "mapfile-scratch"
    scratch.mkdir()
    (scratch / "part-0").write_bytes(b"abc")
    plugins = PluginManager()
    plugins.register(MapFilePlugin(scratch))
    clock = clock_now()
    with Broker(tmp_path / "data", parse_config(MAINTENANCE), plugin_manager=plugins, clock=clock) as broker:
        ledger = broker.topic(TOPIC)
        ledger.run_maintenance()
        assert (scratch / "part-0").exists()
        clock.advance(600)
        ledger.run_maintenance()
        assert not (scratch / "part-0").exists()
