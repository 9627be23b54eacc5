"""Pulsar's file-system offloader (Hadoop MapFiles): the offloader contract,
registered like any third-party offloader, the Hadoop-written vectors read
and rewritten byte for byte through it, reads that seek through ``index``
with read-ahead, and every kind of damaged directory refused by name."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offload_driver_filesystem import FilesystemDriver

from offload_core import Event, InMemoryReadHandle, PluginManager, StorageDriver
from offload_core.errors import FormatError, NotFoundError
from offload_core.formats.hadoop_writables import encode_long_writable
from offload_core.formats.mapfile import MapFileEncoder, index_header
from offload_core.formats.pulsar_v1 import closed_ledger_metadata
from offload_core.formats.sequence_file import Compression
from offload_core.formats.sequence_file_writer import SequenceFileEncoder
from offload_core.memory import MemoryDriver
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader
from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.testing import OffloaderContract
from offload_core.testing.offloader_contract import MakeOffloader
from tests.pulsar_fs_vectors import FsVector, load_fs_vectors

ML = "public/default/persistent/topic"
U = uuid.UUID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")


def _factory() -> type[MapFileLedgerOffloader]:
    spec = PluginManager(load_entry_points=False).offloader("filesystem")
    assert spec.factory is MapFileLedgerOffloader
    return MapFileLedgerOffloader


class TestMapFileOffloader(OffloaderContract):
    @pytest.fixture(params=["memory", "directory"])
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> StorageDriver:
        return MemoryDriver() if request.param == "memory" else FilesystemDriver(str(tmp_path / "hadoop.tmp.dir"))

    @pytest.fixture(params=["BLOCK", "RECORD", "NONE"])
    def make_offloader(self, request: pytest.FixtureRequest) -> MakeOffloader:
        factory = _factory()
        return lambda driver: factory(driver, compression=request.param, block_size=3000, read_buffer_size=1024)


@pytest.mark.parametrize("vector", load_fs_vectors(), ids=lambda v: v.name)
def test_hadoop_written_ledgers_read_entry_for_entry_and_are_rewritten_byte_for_byte(
    vector: FsVector, tmp_path: Path
) -> None:
    theirs = tmp_path / "theirs"
    shutil.copytree(vector.root, theirs)
    ml = vector.spec["managed_ledger_name"]
    reader = MapFileLedgerOffloader(FilesystemDriver(str(theirs)))
    uid = vector.spec["uuid"]
    handle = reader.read_offloaded(vector.ledger_id, uid, {"ManagedLedgerName": ml})
    assert handle.metadata.SerializeToString() == vector.metadata
    if vector.entries:
        assert [e.data for e in handle.read(0, len(vector.entries) - 1)] == vector.entries
        assert [handle.read(n, n)[0].data for n in reversed(range(len(vector.entries)))] == vector.entries[::-1]
    syncs = iter([vector.data_sync, vector.index_sync])
    writer = MapFileLedgerOffloader(FilesystemDriver(str(tmp_path / "ours")), new_sync=lambda: next(syncs))
    metadata = handle.metadata
    ours = InMemoryReadHandle(vector.ledger_id, vector.entries, metadata=metadata)
    if vector.entries:  # an empty ledger is never offloaded (Pulsar refuses it too)
        result = writer.offload(ours, uid, {"ManagedLedgerName": ml})
        assert result.driver_metadata["ManagedLedgerName"] == ml
        for name in ("data", "index", ".data.crc", ".index.crc"):
            assert (tmp_path / "ours" / vector.spec["mapfile_dir"] / name).read_bytes() == vector.file(name), name


def _ledger(driver: StorageDriver, count: int = 300, **options: object) -> tuple[MapFileLedgerOffloader, list[bytes]]:
    entries = [bytes([n % 251]) * (n % 97) + n.to_bytes(4, "big") for n in range(count)]
    offloader = MapFileLedgerOffloader(driver, **{"block_size": 2000, "index_interval": 16, **options})  # type: ignore[arg-type]
    offloader.offload(InMemoryReadHandle(5, entries), U, {"ManagedLedgerName": ML})
    return offloader, entries


def _open(offloader: MapFileLedgerOffloader) -> None:
    handle = offloader.read_offloaded(5, U, {"ManagedLedgerName": ML})
    handle.read(0, handle.last_entry_id)


DIR = f"{ML}/5-{U}"


def test_directory_layout_is_pulsars() -> None:
    driver = MemoryDriver()
    _ledger(driver)
    # No .crc files: only a local directory store has them (HDFS checksums itself).
    assert sorted(info.key for info in driver.list("")) == [f"{DIR}/data", f"{DIR}/index"]


def test_checksum_files_on_a_local_directory(tmp_path: Path) -> None:
    driver = FilesystemDriver(str(tmp_path))
    _ledger(driver)
    names = sorted(info.key.rsplit("/", 1)[1] for info in driver.list(""))
    assert names == [".data.crc", ".index.crc", "data", "index"]


def test_sequential_reads_are_served_by_read_ahead() -> None:
    pool = ReadAheadPool(range_size=4096, reader_bytes=16384)
    offloader, entries = _ledger(MemoryDriver(), 3000, read_ahead=pool, read_buffer_size=1024)
    handle = offloader.read_offloaded(5, U, {"ManagedLedgerName": ML})
    got = []
    for first in range(0, 3000, 50):
        got += [e.data for e in handle.read(first, first + 49)]
    assert got == entries
    assert pool.fetches > 5
    handle.close()
    pool.close()


def _damage(driver: MemoryDriver, name: str, change: Callable[[bytes], bytes]) -> None:
    key = f"{DIR}/{name}"
    driver.write(key, [change(driver.read(key))], metadata={})


@pytest.mark.parametrize("compression", ["BLOCK", "RECORD"])
@pytest.mark.parametrize(
    ("case", "file", "change", "message"),
    [
        ("truncated data", "data", lambda d: d[: len(d) - 5], r"data: cut short: the unit at byte \d+ needs"),
        ("index past the data", "index", None, r"index: index entry for key \d+ points at byte \d+, outside"),
        ("wrong sync mid-file", "data", None, r"data: at byte \d+: sync marker differs"),
        ("bad zlib buffer", "data", None, r"data: at byte \d+: bad zlib buffer"),
    ],
)
def test_damaged_files_are_format_errors_naming_file_and_offset(
    compression: str, case: str, file: str, change: Callable[[bytes], bytes], message: str
) -> None:
    driver = MemoryDriver()
    # Big enough for RECORD's sync markers (one per 100 KiB).
    offloader, _ = _ledger(driver, 3000, compression=compression, new_sync=lambda: b"S" * 16)
    data = driver.read(f"{DIR}/data")
    if case == "index past the data":
        index = _index_with_offsets([(-1, 138), (200, len(data) + 50)])
        driver.write(f"{DIR}/index", [index], metadata={})
    elif case == "wrong sync mid-file":
        at = data.index(b"S" * 16, data.index(b"S" * 16) + 16 + 200)
        _damage(driver, "data", lambda d: d[:at] + b"T" + d[at + 1 :])
    elif case == "bad zlib buffer":
        at = data.index(b"x\x9c", len(data) // 2)
        _damage(driver, "data", lambda d: d[:at] + b"\x00\x00" + d[at + 2 :])
    else:
        _damage(driver, file, change)
    with pytest.raises(FormatError, match=message):
        _open(offloader)


def _index_with_offsets(pairs: list[tuple[int, int]]) -> bytes:
    encoder = SequenceFileEncoder(index_header(b"S" * 16))
    parts = [encoder.header_bytes]
    parts += [encoder.append(encode_long_writable(k), encode_long_writable(v)) for k, v in pairs]
    return b"".join([*parts, encoder.finish()])


def test_key_minus_one_that_is_not_ledger_metadata() -> None:
    driver = MemoryDriver()
    offloader = MapFileLedgerOffloader(driver)
    handle = InMemoryReadHandle(5, [b"a"], metadata=closed_ledger_metadata(length=1, last_entry_id=0))
    offloader.offload(handle, U, {"ManagedLedgerName": ML})
    encoder = MapFileEncoder(compression=Compression.BLOCK, data_sync=b"S" * 16, index_sync=b"I" * 16)
    parts = [encoder.data_header_bytes, encoder.append(-1, b"\xff\xff not protobuf"), encoder.append(0, b"a")]
    tail, index = encoder.finish()
    driver.write(f"{DIR}/data", [b"".join([*parts, tail])], metadata={})
    driver.write(f"{DIR}/index", [index], metadata={})
    with pytest.raises(FormatError, match=r"data: key -1 at byte 138 is not a LedgerMetadataFormat"):
        offloader.read_offloaded(5, U, {"ManagedLedgerName": ML})


def test_missing_index_is_a_format_error_and_missing_ledger_not_found() -> None:
    driver = MemoryDriver()
    offloader, _ = _ledger(driver)
    driver.delete([f"{DIR}/index"])
    with pytest.raises(FormatError, match=r"index: missing beside .*never finished"):
        offloader.read_offloaded(5, U, {"ManagedLedgerName": ML})
    with pytest.raises(NotFoundError):
        offloader.read_offloaded(6, U, {"ManagedLedgerName": ML})


def test_a_changed_key_is_caught() -> None:
    driver = MemoryDriver()
    offloader, _ = _ledger(driver, compression="NONE")
    data = driver.read(f"{DIR}/data")
    key_of_7 = (7).to_bytes(8, "big")
    at = data.index(key_of_7)
    _damage(driver, "data", lambda d: d[:at] + (8).to_bytes(8, "big") + d[at + 8 :])
    with pytest.raises(FormatError, match=r"key 8 where 7 should follow"):
        _open(offloader)


def test_storage_requests_are_counted_and_reported(tmp_path: Path) -> None:
    events: list[Event] = []
    offloader = MapFileLedgerOffloader(FilesystemDriver(str(tmp_path)), emit=events.append)
    offloader.offload(InMemoryReadHandle(5, [b"x" * 100] * 10), U, {"ManagedLedgerName": ML})
    assert offloader.requests.total > 0
    written = [e.fields["key"] for e in events if e.kind == "storage.request" and e.fields["op"] == "write"]
    names = [".data.crc", ".index.crc", "data", "index"]
    assert sorted(set(written)) == [f"{DIR}/{name}" for name in names]
    assert written[-1] == f"{DIR}/index"  # the commit point comes last
    kinds = [e.kind for e in events if e.kind.startswith("offload.")]
    assert kinds == ["offload.started", "offload.finished"]


@settings(deadline=None)
@given(
    st.sampled_from(["BLOCK", "RECORD"]),
    st.sampled_from(["data", "index"]),
    st.booleans(),
    st.data(),
)
def test_damaged_files_give_format_errors_never_wrong_entries(
    compression: str, name: str, truncate: bool, data: st.DataObject
) -> None:
    driver = MemoryDriver()
    offloader, entries = _ledger(driver, 200, compression=compression, block_size=1500)
    key = f"{DIR}/{name}"
    content = driver.read(key)
    if truncate:
        damaged = content[: data.draw(st.integers(0, len(content) - 1))]
    else:
        bit = data.draw(st.integers(0, len(content) * 8 - 1))
        damaged = content[: bit // 8] + bytes([content[bit // 8] ^ (1 << bit % 8)]) + content[bit // 8 + 1 :]
    driver.write(key, [damaged], metadata={})
    try:
        handle = offloader.read_offloaded(5, U, {"ManagedLedgerName": ML})
        got = [e.data for first in range(0, 200, 37) for e in handle.read(first, min(first + 36, 199))]
    except FormatError as exc:
        assert key in str(exc) or f"{DIR}/" in str(exc)
        return
    assert got == entries
