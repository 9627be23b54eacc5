"""Filesystem-driver behaviour beyond the shared contract: layout, crashes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import InvalidKeyError, open_driver

# Dies (no cleanup, no finally blocks) at the Nth rename of one overwrite.
CRASHING_WRITER = textwrap.dedent(
    """
    import os, sys
    from offload_driver_filesystem import FilesystemDriver

    root, die_at = sys.argv[1], int(sys.argv[2])
    driver = FilesystemDriver(root)
    calls = 0
    real_rename = driver._rename

    def rename(src, dst):
        global calls
        calls += 1
        if calls == die_at:
            os._exit(17)
        real_rename(src, dst)

    driver._rename = rename

    def parts():
        yield b"new-" * 1000
        if die_at == 0:
            os._exit(17)
        yield b"tail"

    driver.write("topic/ledger-1", parts(), metadata={"gen": "new"})
    """
)


def crash_during_overwrite(root: Path, die_at: int) -> int:
    FilesystemDriver(str(root)).write("topic/ledger-1", b"old", metadata={"gen": "old"})
    result = subprocess.run([sys.executable, "-c", CRASHING_WRITER, str(root), str(die_at)], check=False)
    return result.returncode


@pytest.mark.parametrize("die_at", [0, 1])
def test_crash_before_commit_keeps_the_old_object(tmp_path: Path, die_at: int) -> None:
    assert crash_during_overwrite(tmp_path, die_at) == 17
    driver = FilesystemDriver(str(tmp_path))
    assert driver.read("topic/ledger-1") == b"old"
    assert driver.stat("topic/ledger-1").metadata == {"gen": "old"}
    assert [info.key for info in driver.list("")] == ["topic/ledger-1"]


@pytest.mark.parametrize("die_at", [2, 3])
def test_crash_after_commit_rolls_forward_on_next_access(tmp_path: Path, die_at: int) -> None:
    assert crash_during_overwrite(tmp_path, die_at) == 17
    driver = FilesystemDriver(str(tmp_path))
    info = driver.stat("topic/ledger-1")
    assert info.metadata == {"gen": "new"}
    assert info.size == 4004
    assert driver.read("topic/ledger-1", 4000) == b"tail"


def test_crash_after_commit_is_rolled_forward_by_a_read_too(tmp_path: Path) -> None:
    assert crash_during_overwrite(tmp_path, 2) == 17
    driver = FilesystemDriver(str(tmp_path))
    assert driver.read("topic/ledger-1", 0, 4) == b"new-"
    assert driver.stat("topic/ledger-1").metadata == {"gen": "new"}


def test_objects_are_plain_files_and_bookkeeping_is_hidden(tmp_path: Path) -> None:
    driver = open_driver(f"file://{tmp_path}")
    driver.write("tenant/ns/ledger-7", [b"abc", b"def"], metadata={"k": "v"})
    assert (tmp_path / "tenant/ns/ledger-7").read_bytes() == b"abcdef"
    assert (tmp_path / ".offload-meta/tenant/ns/ledger-7.json").exists()
    assert not list((tmp_path / ".offload-tmp").iterdir())
    assert [info.key for info in driver.list("")] == ["tenant/ns/ledger-7"]


def test_a_key_below_another_key_is_a_clear_error(tmp_path: Path) -> None:
    driver = FilesystemDriver(str(tmp_path))
    driver.write("a", b"x")
    with pytest.raises(InvalidKeyError, match="'a' is an object"):
        driver.write("a/b", b"y")
    driver.write("c/d", b"x")
    with pytest.raises(InvalidKeyError, match="keys below it exist"):
        driver.write("c", b"y")
    assert [info.key for info in driver.list("")] == ["a", "c/d"]


def test_relative_root_from_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    driver = open_driver("file://relative/bucket")
    driver.write("k", b"v")
    assert (tmp_path / "relative/bucket/k").read_bytes() == b"v"


def test_writes_from_two_processes_do_not_tear(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from offload_driver_filesystem import FilesystemDriver
        driver = FilesystemDriver(sys.argv[1])
        tag = sys.argv[2].encode()
        for n in range(40):
            driver.write("shared", [tag * 500, tag * 500], metadata={"writer": sys.argv[2]})
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), tag]) for tag in ("A", "B")]
    assert [proc.wait() for proc in procs] == [0, 0]
    driver = FilesystemDriver(str(tmp_path))
    data = driver.read("shared")
    writer = driver.stat("shared").metadata["writer"]
    assert data == writer.encode() * 1000
    assert not [name for name in os.listdir(tmp_path / ".offload-meta") if name.endswith(".pending")]
