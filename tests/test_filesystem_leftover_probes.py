"""The filesystem driver's sweep tells a killed writer's files from a live
writer's by probing their locks. A probe must never make a dead writer's
files look held: not when another thread of the sweeping process forks
while a probe holds its descriptor (the child's copy keeps the probe's lock
until it closes it), as a broker starting a segment worker process does."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core.directory_temporaries import TMP_DIR, marker_name, new_owner, temporary_name
from offload_core.leftovers import sweep_leftovers


@pytest.fixture
def forks_during_probes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Fault injection: right after each lock probe (a non-blocking flock)
    succeeds, a child process takes a copy of the probe's descriptor and
    keeps it, as a fork in another thread at that moment would."""
    children: list[subprocess.Popen[bytes]] = []
    real_flock = fcntl.flock

    def flock(fd: int, operation: int) -> None:
        real_flock(fd, operation)
        if operation & fcntl.LOCK_NB:
            children.append(subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                             stdin=subprocess.PIPE, pass_fds=(fd,)))  # fmt: skip

    monkeypatch.setattr(fcntl, "flock", flock)
    try:
        yield children
    finally:
        for child in children:
            assert child.stdin is not None
            child.stdin.close()
            child.wait()


def test_a_fork_during_a_probe_does_not_keep_a_killed_writers_files(
    tmp_path: Path, forks_during_probes: list[subprocess.Popen[bytes]]
) -> None:
    driver = FilesystemDriver(str(tmp_path))
    try:
        tmp = tmp_path / TMP_DIR
        tmp.mkdir()
        # What a writer killed mid-upload leaves: its marker and its upload, unlocked.
        dead = new_owner()
        left = [tmp / marker_name(dead), tmp / temporary_name(dead)]
        left[0].touch()
        left[1].write_bytes(b"x" * 4096)
        swept = sweep_leftovers(driver, now=time.time())  # too young to go by age: only a dead owner goes
        assert forks_during_probes, "no probe ran"
        assert sorted(t.path for t in swept) == sorted(f"{TMP_DIR}/{path.name}" for path in left)
        assert not [path for path in left if path.exists()]
    finally:
        driver.close()
