"""Filesystem-driver behaviour beyond the shared contract: layout, crashes."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import InvalidKeyError, InvalidRangeError, OffloadError, open_driver

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
    # While the driver is open, only the marker telling that its writer lives.
    assert [path.suffix for path in (tmp_path / ".offload-tmp").iterdir()] == [".owner"]
    assert [info.key for info in driver.list("")] == ["tenant/ns/ledger-7"]
    driver.close()
    assert not list((tmp_path / ".offload-tmp").iterdir())


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


# -- hostile layouts: links, bookkeeping files, failures -----------------------


@pytest.fixture
def linked(tmp_path: Path) -> tuple[FilesystemDriver, Path]:
    """A store whose root holds ``evil``, a link to a directory outside it,
    and ``evil-file``, a link to a file outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"not yours")
    root = tmp_path / "root"
    root.mkdir()
    (root / "evil").symlink_to(outside)
    (root / "evil-file").symlink_to(outside / "secret")
    driver = FilesystemDriver(str(root))
    driver.write("ok/inside", b"mine")
    return driver, outside


def test_links_inside_the_root_are_never_followed(linked: tuple[FilesystemDriver, Path]) -> None:
    driver, outside = linked
    for call in (
        lambda: driver.read("evil/secret"),
        lambda: driver.read("evil-file"),
        lambda: driver.stat("evil/secret"),
        lambda: driver.write("evil/planted", b"x"),
        lambda: driver.delete(["evil/secret"]),
        lambda: driver.delete("evil-file"),
    ):
        with pytest.raises(InvalidKeyError, match="symbolic link"):
            call()
    assert [info.key for info in driver.list("")] == ["ok/inside"]
    assert list(driver.list("evil/")) == []
    assert list(driver.list("evil")) == []
    assert sorted(os.listdir(outside)) == ["secret"]
    assert (outside / "secret").read_bytes() == b"not yours"
    assert driver.read("ok/inside") == b"mine"


def test_a_linked_bookkeeping_directory_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / ".offload-meta").symlink_to(outside)
    driver = FilesystemDriver(str(root))
    with pytest.raises(InvalidKeyError, match="symbolic link"):
        driver.write("k", b"v")
    assert list(outside.iterdir()) == []


def tmp_files(root: Path) -> list[str]:
    """The temporary files of writes (not the markers of live drivers)."""
    tmp = root / ".offload-tmp"
    return sorted(name for name in os.listdir(tmp) if not name.endswith(".owner")) if tmp.exists() else []


@pytest.mark.parametrize("fail_at", ["data", "record", "record-rename", "data-rename", "sidecar-rename"])
def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_at: str) -> None:
    driver = FilesystemDriver(str(tmp_path))
    driver.write("topic/obj", b"old", metadata={"gen": "1"})
    real_put, real_rename = driver._put_file, driver._rename

    def put_file(path: str, parts: object) -> int:
        if (fail_at == "data" and not path.endswith(".pending")) or (fail_at == "record" and path.endswith(".pending")):
            raise OSError(28, "No space left on device")
        return real_put(path, parts)  # type: ignore[arg-type]

    def rename(src: str, dst: str) -> None:
        if (
            (fail_at == "record-rename" and dst.endswith(".pending"))
            or (fail_at == "data-rename" and dst.endswith("topic/obj"))
            or (fail_at == "sidecar-rename" and dst.endswith(".json"))
        ):
            raise OSError(5, "Input/output error")
        real_rename(src, dst)

    monkeypatch.setattr(driver, "_put_file", put_file)
    monkeypatch.setattr(driver, "_rename", rename)
    with pytest.raises(OSError, match="error|space"):
        driver.write("topic/obj", b"new", metadata={"gen": "2"})
    monkeypatch.undo()
    fresh = FilesystemDriver(str(tmp_path))
    # Before the commit point the old object stays; after it, the next
    # access rolls the new one forward. Either way nothing is left over.
    expected = (b"old", "1") if fail_at in ("data", "record", "record-rename") else (b"new", "2")
    assert (fresh.read("topic/obj"), fresh.stat("topic/obj").metadata["gen"]) == expected
    assert tmp_files(tmp_path) == []
    assert not list((tmp_path / ".offload-meta/topic").glob("*.pending"))


def test_a_record_rename_whose_directory_sync_fails_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = FilesystemDriver(str(tmp_path))
    driver.write("obj", b"old")
    real_rename = driver._rename

    def rename_then_fail(src: str, dst: str) -> None:
        real_rename(src, dst)
        if dst.endswith(".pending"):
            raise OSError(5, "fsync of the directory failed")

    monkeypatch.setattr(driver, "_rename", rename_then_fail)
    with pytest.raises(OSError, match="fsync"):
        driver.write("obj", b"new")
    monkeypatch.undo()
    assert FilesystemDriver(str(tmp_path)).read("obj") == b"old"
    assert tmp_files(tmp_path) == []


@pytest.mark.parametrize(
    "record",
    [
        b"{not json",
        b"[]",
        b'{"size": 3, "metadata": {}}',
        b'{"tmp": 7, "size": 3, "metadata": {}}',
        b'{"tmp": "TMPDIR/0123456789abcdef0123456789abcdef", "size": 3, "metadata": "x"}',
        b'{"tmp": "OUTSIDE", "size": 3, "metadata": {}}',
        b'{"tmp": "TMPDIR/../../outside/victim", "size": 3, "metadata": {}}',
        b"\xff\xfe",
    ],
)
def test_a_corrupt_or_crafted_pending_record_is_discarded(tmp_path: Path, record: bytes) -> None:
    root = tmp_path / "root"
    driver = FilesystemDriver(str(root))
    driver.write("obj", b"committed", metadata={"gen": "1"})
    victim = tmp_path / "outside" / "victim"
    victim.parent.mkdir()
    victim.write_bytes(b"precious")
    text = record.replace(b"TMPDIR", str(root / ".offload-tmp").encode()).replace(b"OUTSIDE", str(victim).encode())
    (root / ".offload-meta" / "obj.pending").write_bytes(text)
    assert driver.read("obj") == b"committed"
    assert driver.stat("obj").metadata == {"gen": "1"}
    assert victim.read_bytes() == b"precious"
    assert not (root / ".offload-meta" / "obj.pending").exists()
    driver.delete("obj")
    assert not driver.exists("obj")


def test_a_corrupt_sidecar_names_the_file_and_the_repair(tmp_path: Path) -> None:
    driver = FilesystemDriver(str(tmp_path))
    driver.write("obj", b"x", metadata={"k": "v"})
    (tmp_path / ".offload-meta" / "obj.json").write_text('{"no metadata": 1}')
    with pytest.raises(OffloadError, match=r"obj\.json.*corrupt.*rewrite the object"):
        driver.stat("obj")
    assert driver.read("obj") == b"x"
    driver.write("obj", b"y", metadata={"k": "w"})
    assert driver.stat("obj").metadata == {"k": "w"}


def test_a_range_far_past_the_end_allocates_nothing(tmp_path: Path) -> None:
    driver = open_driver(f"file://{tmp_path}")
    driver.write("ten", b"0123456789")
    assert driver.read("ten", 0, 1 << 40) == b"0123456789"
    assert driver.read("ten", 3, 2**63 - 1) == b"3456789"
    with pytest.raises(InvalidRangeError):
        driver.read("ten", 10, 2**63 - 1)


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="early writeback starts through posix_fadvise (Linux)")
@pytest.mark.parametrize("fsync", [True, False])
def test_parts_are_written_back_as_they_arrive_not_all_at_the_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync: bool
) -> None:
    started: list[tuple[int, int, int]] = []
    real_fadvise = os.posix_fadvise

    def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
        assert os.fstat(fd).st_size >= offset + length  # the range is on the file, not in a buffer of ours
        started.append((offset, length, advice))
        real_fadvise(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", fadvise)
    driver = FilesystemDriver(str(tmp_path / "bucket"), fsync=fsync)
    mib = 1 << 20
    parts = [b"a" * (3 * mib // 2), b"b" * (mib // 2), b"c" * 100, b"d" * (2 * mib)]
    driver.write("segment/data", iter(parts), metadata={"k": "v"})
    assert driver.read("segment/data") == b"".join(parts)
    # Whole mebibytes, each once, as soon as a part completes one; nothing
    # for small writes (the sidecar records) nor when nothing is synced.
    dontneed = os.POSIX_FADV_DONTNEED
    assert started == ([(0, mib, dontneed), (mib, mib, dontneed), (2 * mib, 2 * mib, dontneed)] if fsync else [])


@pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="early writeback starts through posix_fadvise (Linux)")
def test_a_filesystem_refusing_the_writeback_advice_still_gets_the_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused: list[int] = []

    def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
        refused.append(offset)
        raise OSError(errno.EINVAL, "advice not supported here")

    monkeypatch.setattr(os, "posix_fadvise", fadvise)
    driver = FilesystemDriver(str(tmp_path / "bucket"))
    parts = [bytes([n]) * (1 << 20) for n in range(3)]
    driver.write("segment/data", iter(parts))
    assert refused == [0, 1 << 20, 2 << 20]
    assert driver.read("segment/data") == b"".join(parts)


def test_the_data_and_its_commit_record_are_fsynced_before_the_commit_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash after the commit rename rolls the object forward from its data
    file: had the data not reached the disk by then, the object would come
    back short or empty. Observed on the system calls, in order."""
    driver = FilesystemDriver(str(tmp_path / "bucket"))
    calls: list[tuple[str, int, str]] = []  # ("fsync", inode, kind) or ("replace", inode, destination)
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        status = os.fstat(fd)
        calls.append(("fsync", status.st_ino, "directory" if stat.S_ISDIR(status.st_mode) else "file"))
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        calls.append(("replace", os.stat(src).st_ino, str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    driver.write("topic/obj", [b"data " * 1000, b"more"], metadata={"k": "v"})
    monkeypatch.undo()

    replaces = [(at, inode, dst) for at, (call, inode, dst) in enumerate(calls) if call == "replace"]
    [(commit, record, _)] = [r for r in replaces if r[2].endswith(".pending")]
    [(visible, data, _)] = [r for r in replaces if r[2] == driver._path("topic/obj")]
    synced_files = [inode for call, inode, kind in calls[:commit] if call == "fsync" and kind == "file"]
    assert commit < visible
    assert data in synced_files, "the data file is not fsynced before the commit record is renamed into place"
    assert record in synced_files, "the commit record is not fsynced before it is renamed into place"
    assert FilesystemDriver(str(tmp_path / "bucket")).read("topic/obj") == b"data " * 1000 + b"more"
