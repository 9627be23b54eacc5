"""Reads of MapFile ledgers check the ``.crc`` files beside them, as
Hadoop's ``ChecksumFileSystem`` does: a flipped byte that the format itself
cannot catch (NONE compression) is a :class:`FormatError` naming the file
and offset, and a ranged read fetches only the checksum words it needs."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offload_driver_filesystem import FilesystemDriver

from offload_core import Event, InMemoryReadHandle, StorageDriver
from offload_core.errors import FormatError
from offload_core.memory import MemoryDriver
from offload_core.offload.mapfile.mapfile_offloader import MapFileLedgerOffloader

ML = "public/default/persistent/topic"
U = uuid.UUID("3f2504e0-4f89-41d3-9a0c-0305e82c3301")
DIR = f"{ML}/5-{U}"
ENTRIES = [n.to_bytes(4, "big") + bytes([n % 251]) * 300 for n in range(400)]


def _offload(driver: StorageDriver, **options: object) -> MapFileLedgerOffloader:
    offloader = MapFileLedgerOffloader(driver, compression="NONE", read_buffer_size=4096, **options)  # type: ignore[arg-type]
    offloader.offload(InMemoryReadHandle(5, ENTRIES), U, {"ManagedLedgerName": ML})
    return offloader


def _flip(driver: StorageDriver, name: str, at: int) -> None:
    key = f"{DIR}/{name}"
    content = bytearray(driver.read(key))
    content[at] ^= 0x01
    driver.write(key, [bytes(content)], metadata={})


def _read_all(offloader: MapFileLedgerOffloader) -> list[bytes]:
    handle = offloader.read_offloaded(5, U, {"ManagedLedgerName": ML})
    try:
        return [e.data for e in handle.read(0, handle.last_entry_id)]
    finally:
        handle.close()


def test_a_flipped_payload_byte_is_caught_on_a_local_directory(tmp_path: Path) -> None:
    driver = FilesystemDriver(str(tmp_path))
    offloader = _offload(driver)
    data = driver.read(f"{DIR}/data")
    at = data.index(ENTRIES[200]) + 100  # inside a payload: NONE compression has no check of its own
    _flip(driver, "data", at)
    chunk = at - at % 512
    with pytest.raises(FormatError, match=rf"{DIR}/data: checksum mismatch in the bytes from offset {chunk} "):
        _read_all(offloader)


def test_a_flipped_index_byte_is_caught() -> None:
    driver = MemoryDriver()
    offloader = _offload(driver, checksum_files=True)
    _flip(driver, "index", 130)
    with pytest.raises(FormatError, match=rf"{DIR}/index: checksum mismatch in the bytes from offset 0 "):
        _read_all(offloader)


def test_without_checksum_files_reads_go_on() -> None:
    driver = MemoryDriver()
    offloader = _offload(driver, checksum_files=False)
    assert _read_all(offloader) == ENTRIES


def test_a_ranged_read_fetches_only_the_checksum_words_it_needs() -> None:
    driver = MemoryDriver()
    events: list[Event] = []
    _offload(driver, checksum_files=True)
    reader = MapFileLedgerOffloader(driver, read_buffer_size=1024, emit=events.append)
    handle = reader.read_offloaded(5, U, {"ManagedLedgerName": ML})
    assert handle.read(399, 399)[0].data == ENTRIES[399]
    reads = [(e.fields["key"], int(e.fields["bytes"])) for e in events if e.kind == "storage.request"
             and e.fields["op"] == "read" and e.fields["key"] in (f"{DIR}/data", f"{DIR}/.data.crc")]  # fmt: skip
    assert reads[0] == (f"{DIR}/.data.crc", 8)  # its header, once
    pairs = list(zip(reads[1::2], reads[2::2], strict=True))
    assert pairs and all(key == f"{DIR}/data" and crc == f"{DIR}/.data.crc" for (key, _), (crc, _) in pairs)
    # The words covering each read's whole 512-byte chunks, no more.
    assert all(crc_bytes == 4 * -(-data_bytes // 512) for (_, data_bytes), (_, crc_bytes) in pairs)
    assert sum(crc_bytes for _, (_, crc_bytes) in pairs) < driver.stat(f"{DIR}/.data.crc").size
    handle.close()


@settings(deadline=None, max_examples=40)
@given(st.sampled_from(["NONE", "RECORD", "BLOCK"]), st.data())
def test_every_flipped_data_bit_is_caught_when_checksums_are_there(compression: str, data: st.DataObject) -> None:
    driver = MemoryDriver()
    offloader = MapFileLedgerOffloader(driver, compression=compression, checksum_files=True, block_size=5000)
    offloader.offload(InMemoryReadHandle(5, ENTRIES[:60]), U, {"ManagedLedgerName": ML})
    size = driver.stat(f"{DIR}/data").size
    bit = data.draw(st.integers(0, size * 8 - 1))
    key = f"{DIR}/data"
    content = bytearray(driver.read(key))
    content[bit // 8] ^= 1 << bit % 8
    driver.write(key, [bytes(content)], metadata={})
    with pytest.raises(FormatError, match=rf"{DIR}/data"):
        _read_all(offloader)
