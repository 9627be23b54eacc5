"""Faults must not brick, leak or balloon: bad objects never stop a scan,
object contents never make us allocate without bound, crashed writers'
temporaries are swept, and bad input from the shell is one line."""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import BlobStoreLedgerOffloader, FormatError, InMemoryReadHandle
from offload_core.formats import pulsar_v1 as v1
from offload_core.instrument import InstrumentedDriver
from offload_core.leftovers import sweep_leftovers
from offload_core.memory import MemoryDriver

U1 = "11111111-1111-4111-8111-111111111111"
U2 = "22222222-2222-4222-8222-222222222222"
U3 = "33333333-3333-4333-8333-333333333333"


def offload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True)


def entries_of(ledger_id: int, count: int = 120) -> list[bytes]:
    rng = random.Random(ledger_id)
    return [rng.randbytes(rng.randrange(0, 300)) for _ in range(count)]


@pytest.fixture
def bucket(tmp_path: Path) -> Path:
    root = tmp_path / "bucket"
    offloader = BlobStoreLedgerOffloader(FilesystemDriver(str(root)), max_block_size=4096)
    for ledger_id, uid in ((1, U1), (2, U2), (3, U3)):
        offloader.offload(InMemoryReadHandle(ledger_id, entries_of(ledger_id)), uuid.UUID(uid))
    return root


# -- scans go on past bad objects -------------------------------------------------


def test_an_empty_index_among_healthy_ledgers_is_one_defect(bucket: Path) -> None:
    FilesystemDriver(str(bucket)).write(v1.index_key(U2, 2), b"", metadata={v1.FORMAT_VERSION_KEY: "1"})
    listing = offload("ledgers", "ls", f"file://{bucket}", "--json")
    assert listing.returncode == 0, listing.stderr
    rows = {row["ledger_id"]: row for row in map(json.loads, listing.stdout.splitlines())}
    assert rows[1]["state"] == rows[3]["state"] == "complete"
    assert rows[2]["state"] == "unreadable index: index object is empty"
    verified = offload("ledgers", "verify", f"file://{bucket}", "--json")
    assert verified.returncode == 1
    reports = {r["ledger_id"]: r for r in map(json.loads, verified.stdout.splitlines())}
    assert reports[1]["ok"] and reports[3]["ok"] and reports[3]["entries"] == 120
    assert reports[2]["defects"][0]["problem"] == "index is corrupt: index object is empty"


def test_reading_a_whole_empty_object_is_no_error() -> None:
    driver = MemoryDriver()
    driver.write("empty", b"")
    assert driver.read("empty") == b""


# -- bounded allocations ----------------------------------------------------------


def test_an_implausibly_large_index_is_refused_before_it_is_read() -> None:
    driver = InstrumentedDriver(MemoryDriver())
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=4096)
    offloader.offload(InMemoryReadHandle(5, entries_of(5, 20)), uuid.UUID(U1))
    index = v1.decode_index(driver.read(v1.index_key(U1, 5)))
    count, meta = 100_000, index.ledger_metadata
    header = struct.pack(">Iiqqii", v1.INDEX_MAGIC, 32 + len(meta) + 20 * count, index.data_object_length, 128,
                         count, len(meta))  # fmt: skip
    huge = header + meta + b"".join(struct.pack(">qiq", 0, n + 1, n * 128) for n in range(count))
    driver.write(v1.index_key(U1, 5), huge, metadata={v1.FORMAT_VERSION_KEY: "1"})
    before = driver.counts.snapshot()
    with pytest.raises(FormatError, match="more than the index of a .*-byte data object can be"):
        offloader.read_offloaded(5, U1)
    assert driver.counts.since(before).requests["read"] == 0
    capped = BlobStoreLedgerOffloader(driver, max_block_size=4096, max_index_size=64)
    driver.write(v1.index_key(U1, 5), v1.encode_index(index), metadata={v1.FORMAT_VERSION_KEY: "1"})
    with pytest.raises(FormatError, match="over the limit of 64 bytes"):
        capped.read_offloaded(5, U1)


def test_a_large_entry_is_fetched_in_bounded_pieces() -> None:
    driver = InstrumentedDriver(MemoryDriver())
    big = random.Random(1).randbytes(20 * 2**20)
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=32 * 2**20)
    offloader.offload(InMemoryReadHandle(9, [b"a", big, b"c"]), uuid.UUID(U1))
    sizes: list[int] = []
    real_read = driver.inner._read

    def recording(key: str, start: int, end: int | None) -> bytes:
        sizes.append((end or 0) - start)
        return real_read(key, start, end)

    driver.inner._read = recording  # type: ignore[method-assign]
    assert offloader.read_offloaded(9, U1).read(1, 1)[0].data == big
    assert max(sizes) <= 8 * 2**20 and sum(sizes) >= len(big)


HUGE_BLOCK_READER = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))
    from offload_core import BlobStoreLedgerOffloader, FormatError, open_driver
    from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
    from offload_core.offload.ledgers.verify import verify_ledger
    driver = open_driver("file://" + sys.argv[1], create=False)
    try:
        BlobStoreLedgerOffloader(driver).read_offloaded(7, sys.argv[2]).read(0, 0)
    except FormatError as exc:
        print("reader:", exc)
    (ledger,) = find_offloaded_ledgers(driver)
    print("verify:", verify_ledger(driver, ledger).defects[0].problem)
    """
)


def test_a_huge_block_claimed_by_an_index_is_refused_under_a_memory_limit(tmp_path: Path) -> None:
    root = tmp_path / "bucket"
    driver = FilesystemDriver(str(root))
    size = 3 * 2**30
    metadata = v1.closed_ledger_metadata(length=2**31 - 1, last_entry_id=0).SerializeToString()
    index = v1.Index(data_object_length=size, ledger_metadata=metadata, entries=(v1.IndexEntry(0, 1, 0),))
    driver.write(v1.index_key(U1, 7), v1.encode_index(index), metadata={v1.FORMAT_VERSION_KEY: "1"})
    header = v1.encode_block_header(v1.BlockHeader(size, 0)) + (2**31 - 1).to_bytes(4, "big") + bytes(8)
    driver.write(v1.data_key(U1, 7), header, metadata={v1.FORMAT_VERSION_KEY: "1"})
    os.truncate(root / v1.data_key(U1, 7), size)  # sparse: 3 GiB that take no disk
    result = subprocess.run(
        [sys.executable, "-c", HUGE_BLOCK_READER, str(root), U1], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "MemoryError" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("reader: ") and "over the limit of 134217728 bytes for a block" in lines[0]
    assert lines[1].startswith("verify: index is corrupt: block 1") and "over the limit" in lines[1]


# -- crashed writers' temporaries -------------------------------------------------


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_stale_temporaries_are_swept_but_never_live_or_committed_ones(tmp_path: Path) -> None:
    root = tmp_path / "bucket"
    driver = FilesystemDriver(str(root))
    driver.write("kept", b"committed")
    tmp = root / ".offload-tmp"
    orphan = tmp / ("a" * 32)
    orphan.write_bytes(b"x" * 1000)
    fresh = tmp / ("b" * 32)
    fresh.write_bytes(b"y")
    # A committed write whose roll-forward a crash cut short: its data is
    # still a temporary file named by a pending record.
    committed = tmp / ("c" * 32)
    committed.write_bytes(b"rolled forward")
    (root / ".offload-meta" / "late.pending").write_text(
        json.dumps({"tmp": str(committed), "size": 14, "metadata": {"k": "v"}})
    )
    for path in (orphan, committed):
        age(path, 7200)
    # A live writer's temporary file, old but locked.
    live = driver._create_file(str(tmp / ("d" * 32)))
    live.write(b"in flight")
    age(tmp / ("d" * 32), 7200)
    try:
        listing = offload("ledgers", "ls", f"file://{root}")
        assert "1 leftover file(s) of killed writers (1000 bytes)" in listing.stderr
        due = sweep_leftovers(driver, now=time.time(), dry_run=True)
        assert [temporary.path for temporary in due] == [f".offload-tmp/{'a' * 32}"]
        assert orphan.exists()
        swept = offload("ledgers", "sweep", f"file://{root}")
        assert swept.returncode == 0 and f"removed .offload-tmp/{'a' * 32} (1000 bytes)" in swept.stdout
    finally:
        live.close()
    # The marker of the live driver stays too.
    assert sorted(path.name for path in tmp.iterdir() if path.suffix != ".owner") == ["b" * 32, "d" * 32]
    assert driver.read("late") == b"rolled forward" and driver.stat("late").metadata == {"k": "v"}
    assert driver.read("kept") == b"committed"


# -- partial reads -----------------------------------------------------------------


def test_cat_prints_every_intact_entry_before_the_damage(bucket: Path) -> None:
    driver = FilesystemDriver(str(bucket))
    key = v1.data_key(U1, 1)
    data = bytearray(driver.read(key))
    second = v1.decode_index(driver.read(v1.index_key(U1, 1))).entries[1]
    data[second.offset] ^= 0xFF  # the second block's magic
    driver.write(key, bytes(data), metadata={v1.FORMAT_VERSION_KEY: "1"})
    result = offload("ledgers", "cat", f"file://{bucket}", "1", "--json")
    assert result.returncode == 1
    printed = [json.loads(line)["entry_id"] for line in result.stdout.splitlines()]
    assert printed == list(range(second.first_entry_id))
    assert f"byte offset {second.offset}" in result.stderr and "magic" in result.stderr


def test_a_lowered_last_entry_id_is_caught_on_read(bucket: Path) -> None:
    driver = FilesystemDriver(str(bucket))
    index = v1.decode_index(driver.read(v1.index_key(U3, 3)))
    metadata = index.metadata()
    metadata.lastEntryId = 117  # two entries fewer than the blocks hold
    lowered = v1.Index(index.data_object_length, metadata.SerializeToString(), index.entries)
    driver.write(v1.index_key(U3, 3), v1.encode_index(lowered), metadata={v1.FORMAT_VERSION_KEY: "1"})
    handle = BlobStoreLedgerOffloader(driver).read_offloaded(3, U3)
    with pytest.raises(FormatError, match="after entry 117, the ledger's last entry, comes another entry header"):
        handle.read(0, 117)
    assert offload("ledgers", "cat", f"file://{bucket}", "3", "--json").returncode == 1


# -- one-line errors from the shell -------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["drivers", "check", "file:///proc/1/nope"], "cannot be created"),
        (["drivers", "check", "file://{tmp}/b", "-o", "create=\u00b2"], "'create' is true or false"),
        (["drivers", "check", "file://{tmp}/b", "-o", "fsync=maybe"], "'fsync' is true or false"),
        (["drivers", "check", "file://{tmp}/b", "-o", "create=0"], "'create' is true or false"),
        (["topics", "produce", "a/b/c", "--size", "99999999999999", "--data-dir", "{tmp}/d"], "--size"),
        (["topics", "list", "--data-dir", "/dev/null"], "is not a directory"),
        (["topics", "list", "--data-dir", "{tmp}/d", "--config", "{tmp}/latin1.toml"], "is not UTF-8 text"),
        (["topics", "list", "--data-dir", "{tmp}/garbage"], "not a SQLite database"),
        (["drivers", "check", "az://container", "-o", "connection_string=garbage"], "rejected the connection"),
        (["ledgers", "ls", "file://{tmp}/nonexistent/x"], "is not a directory"),
        (["ledgers", "cat", "file://{tmp}", "1", "--from", "10", "--to", "5"], "not a range of entry ids"),
    ],
)
def test_bad_input_is_one_line_without_a_traceback(tmp_path: Path, args: list[str], expected: str) -> None:
    (tmp_path / "latin1.toml").write_bytes(b'managedLedgerOffloadBucket = "\xff"\n')
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "metadata.db").write_bytes(b"this is not a database, not even close" * 100)
    result = offload(*[arg.replace("{tmp}", str(tmp_path)) for arg in args])
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert expected in result.stderr
    assert not (tmp_path / "nonexistent").exists()


def test_a_damaged_managed_ledger_record_is_not_taken_for_a_new_topic(tmp_path: Path) -> None:
    from offload_core.managed_ledger import Broker

    data = tmp_path / "data"
    with Broker(data) as broker:
        topic = broker.topic("a/b/c")
        for n in range(30):
            topic.append(b"%d" % n)
    path = "managed-ledgers/a/b/persistent/c"
    with Broker(data) as broker:
        broker.store.set(path, b"", broker.store.get(path).version)  # type: ignore[union-attr]
    result = offload("topics", "consume", "a/b/c", "--data-dir", str(data))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "empty metadata record" in result.stderr and "belong to no topic" in result.stderr
    with Broker(data) as broker:
        assert broker.unclaimed_hot_files() == [1]
    with Broker(data) as broker:
        broker.store.set(path, b"\xff\xfe garbage", broker.store.get(path).version)  # type: ignore[union-attr]
    damaged = offload("topics", "stats", "a/b/c", "--data-dir", str(data))
    assert damaged.returncode != 0 and "Traceback" not in damaged.stderr and "restore" in damaged.stderr
