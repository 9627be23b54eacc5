"""The fsync policies, proven: which descriptors are synced when, and what a
power loss keeps (in the spirit of LevelDB's FaultInjectionTestEnv).

A SIGKILL never loses page-cache data, so killing a process cannot tell the
policies apart. Here a simulated disk records every fsync of the hot tier's
files and of their directories; a "power loss" then cuts every file back
to what its last fsync made durable and forgets files whose directory entry
was never synced. Reopening the data directory must find every
acknowledged entry under ``always`` and lose at most one batch under
``batch``.
"""

from __future__ import annotations

import os
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from offload_driver_filesystem import FilesystemDriver
from offload_driver_filesystem import driver as filesystem_module

from offload_core.managed_ledger import Broker, parse_config
from offload_core.managed_ledger.hot import ledger_file as ledger_file_module
from offload_core.model import Position

TOPIC = "acme/prod/orders"
BATCH = 256  # LedgerFile's default batch size


class SimulatedDisk:
    """Wraps the ``os`` functions one module calls: tracks, per path, the
    size its last fsync made durable and whether a directory fsync made its
    name durable."""

    def __init__(self) -> None:
        self.paths: dict[int, str] = {}
        self.durable_size: dict[str, int] = {}
        self.named: set[str] = set()
        self.created: set[str] = set()
        self.log: list[tuple[str, str]] = []

    def os_proxy(self) -> Any:
        disk = self
        proxy = types.SimpleNamespace(**{name: getattr(os, name) for name in dir(os) if not name.startswith("__")})

        def open_(path: Any, flags: int, mode: int = 0o777) -> int:
            fd = os.open(path, flags, mode)
            disk.paths[fd] = str(path)
            if flags & os.O_CREAT and flags & os.O_EXCL:
                disk.created.add(str(path))
            return fd

        def fsync(fd: int) -> None:
            os.fsync(fd)
            path = disk.paths.get(fd, f"fd {fd}")
            disk.durable_size[path] = os.fstat(fd).st_size
            disk.log.append(("fsync", path))

        proxy.open = open_
        proxy.fsync = fsync
        return proxy

    def fsync_dir(self, path: Any) -> None:
        directory = str(path)
        for created in self.created:
            if os.path.dirname(created) == directory:
                self.named.add(created)
        self.log.append(("dirsync", directory))

    def power_loss(self) -> None:
        for path in self.created - self.named:
            if os.path.exists(path):
                os.unlink(path)
        for path in set(self.paths.values()):
            if os.path.exists(path):
                os.truncate(path, min(os.path.getsize(path), self.durable_size.get(path, 0)))


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatedDisk]:
    simulated = SimulatedDisk()
    monkeypatch.setattr(ledger_file_module, "os", simulated.os_proxy())
    monkeypatch.setattr(ledger_file_module, "fsync_dir", simulated.fsync_dir)
    yield simulated


def broker_for(data_dir: Path, fsync: str) -> Broker:
    return Broker(data_dir, parse_config({"managedLedgerFsyncPolicy": fsync, "managedLedgerMaxEntriesPerLedger": 700}))


def crash(broker: Broker) -> None:
    """Stop without flushing, syncing or sealing anything: descriptors are
    closed raw (releasing the ownership lock), as the kernel would, and
    the periodic maintenance stops as a killed process's threads do (or
    it would run later in the test session against the closed store)."""
    broker._stopping.set()
    if broker._ticker is not None:
        broker._ticker.join()
    for ledger in broker._open.values():
        if ledger._current is not None:
            os.close(ledger._current._fd)
            ledger._current._fd = -1
        for hot in ledger._hot.values():
            os.close(hot._fd)
            hot._fd = -1
        os.close(ledger._owner_fd)
        ledger._owner_fd = -1
    broker.store.close()


def append_and_lose_power(data_dir: Path, disk: SimulatedDisk, fsync: str, count: int) -> list[Position]:
    broker = broker_for(data_dir, fsync)
    topic = broker.topic(TOPIC)
    acknowledged = [topic.append(b"entry %d" % n) for n in range(count)]
    crash(broker)
    disk.power_loss()
    return acknowledged


def surviving(data_dir: Path) -> list[bytes]:
    with broker_for(data_dir, "always") as broker:
        topic = broker.topic(TOPIC)
        first = topic.ledgers()[0].ledger_id if topic.ledgers() else 1
        return [entry.data for entry in topic.read(Position(first, 0), 100_000)]


def test_always_loses_no_acknowledged_entry(tmp_path: Path, disk: SimulatedDisk) -> None:
    acknowledged = append_and_lose_power(tmp_path / "data", disk, "always", 1000)
    assert len(acknowledged) == 1000
    assert surviving(tmp_path / "data") == [b"entry %d" % n for n in range(1000)]


def test_batch_loses_at_most_one_batch(tmp_path: Path, disk: SimulatedDisk) -> None:
    append_and_lose_power(tmp_path / "data", disk, "batch", 1000)
    kept = surviving(tmp_path / "data")
    assert kept == [b"entry %d" % n for n in range(len(kept))]  # a prefix, nothing torn or reordered
    assert 1000 - BATCH < len(kept) <= 1000
    # 700 entries sealed the first ledger (synced at seal); 300 in the second: one batch of 256 synced.
    assert len(kept) == 700 + 256


def test_none_makes_no_promise_but_keeps_a_clean_prefix(tmp_path: Path, disk: SimulatedDisk) -> None:
    append_and_lose_power(tmp_path / "data", disk, "none", 300)
    kept = surviving(tmp_path / "data")
    assert kept == [b"entry %d" % n for n in range(len(kept))]


def test_which_descriptors_are_synced_when(tmp_path: Path, disk: SimulatedDisk) -> None:
    with broker_for(tmp_path / "data", "batch") as broker:
        topic = broker.topic(TOPIC)
        for n in range(2 * BATCH):
            topic.append(b"x%d" % n)
            if n == 0:
                ledger_path = disk.paths[topic._current._fd]  # type: ignore[union-attr]
                # Creating the file syncs the header, then the directory entry.
                assert disk.log[-2:] == [("fsync", ledger_path), ("dirsync", os.path.dirname(ledger_path))]
        appends = [entry for entry in disk.log if entry == ("fsync", ledger_path)]
        assert len(appends) == 1 + 2  # the header, then one per batch of 256
        topic.append(b"tail")
        before_seal = len(disk.log)
        topic._seal_current()
        assert ("fsync", ledger_path) in disk.log[before_seal:]  # sealing syncs the unsynced tail


def test_the_filesystem_store_syncs_data_before_rename_and_directories_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        real_fsync(fd)
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))

    def replace(src: str, dst: str) -> None:
        real_replace(src, dst)
        events.append(("rename", dst))

    proxy = types.SimpleNamespace(**{name: getattr(os, name) for name in dir(os) if not name.startswith("__")})
    proxy.fsync, proxy.replace = fsync, replace
    monkeypatch.setattr(filesystem_module, "os", proxy)
    monkeypatch.setattr(filesystem_module, "fsync_dir", lambda path: events.append(("dirsync", str(path))))
    root = tmp_path / "bucket"
    FilesystemDriver(str(root)).write("t/obj", [b"a" * 100, b"b"], metadata={"k": "v"})
    renames = [n for n, event in enumerate(events) if event[0] == "rename"]
    data_rename = next(n for n in renames if events[n][1] == str(root / "t/obj"))
    synced_before = [path for kind, path in events[:data_rename] if kind == "fsync"]
    assert any(".offload-tmp/" in path and not path.endswith(".pending") for path in synced_before)
    assert any(path.endswith(".pending") for path in synced_before)  # the commit record, before its rename
    # A crash after the commit point is rolled forward from the data's
    # temporary file: its directory entry is durable before the record is.
    commit = next(n for n in renames if events[n][1].endswith("t/obj.pending"))
    assert ("dirsync", str(root / ".offload-tmp")) in events[:commit]
    assert ("dirsync", str(root / "t")) in events[data_rename:]
    sidecar = next(n for n in renames if events[n][1].endswith("t/obj.json"))
    assert ("dirsync", str(root / ".offload-meta/t")) in events[sidecar:]
    for off in (False, "false", "FALSE"):  # Spark and -o options arrive as text
        unsynced = FilesystemDriver(str(tmp_path / "fast"), fsync=off)
        before = len(events)
        unsynced.write("k", b"v")
        assert not [event for event in events[before:] if event[0] in ("fsync", "dirsync")]
