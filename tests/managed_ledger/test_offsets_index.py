"""Sealed hot-tier ledgers open from their offsets index, without reading
their payloads; a missing or bad index falls back to the scan and is
rewritten."""

from __future__ import annotations

import contextlib
import os
from array import array
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import FormatError
from offload_core.managed_ledger.hot import ledger_file as ledger_file_module
from offload_core.managed_ledger.hot.ledger_file import LedgerFile, index_path
from offload_core.managed_ledger.hot.offsets_index import (
    CHUNK_ENTRIES,
    HEADER_SIZE,
    OffsetsIndex,
    decode_offsets_index,
    encode_offsets_index,
)


def sealed(path: Path, count: int = 1000, size: int = 1024) -> list[bytes]:
    payloads = [bytes([n % 251]) * size for n in range(count)]
    ledger = LedgerFile.create(path, 3)
    for payload in payloads:
        ledger.append(payload)
    ledger.sync()
    ledger.write_offsets_index()
    ledger.close()
    return payloads


def count_preads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the bytes every ``os.pread`` returns from now on (in ``[0]``)."""
    read = [0]
    real_pread = os.pread

    def counting(fd: int, count: int, offset: int) -> bytes:
        data = real_pread(fd, count, offset)
        read[0] += len(data)
        return data

    monkeypatch.setattr(ledger_file_module.os, "pread", counting)
    return read


def bytes_read_opening(path: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    read = count_preads(monkeypatch)
    try:
        LedgerFile.open(path, 3, repair=False).close()
    finally:
        monkeypatch.undo()
    return read[0]


def test_a_sealed_ledger_opens_without_reading_its_payloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "3.log"
    payloads = sealed(path)
    assert bytes_read_opening(path, monkeypatch) == 16 + HEADER_SIZE  # the two headers, nothing else
    ledger = LedgerFile.open(path, 3, repair=False)
    assert [e.data for e in ledger.read(0, 999)] == payloads  # each entry's CRC still checked on read
    assert (ledger.entry_count, ledger.length) == (1000, 1024 * 1000)


@pytest.mark.parametrize("damage", ["missing", "flipped", "other ledger", "stale size", "truncated"])
def test_a_missing_or_bad_index_falls_back_to_the_scan_and_is_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    path = tmp_path / "3.log"
    payloads = sealed(path, count=50)
    index = index_path(path)
    good = index.read_bytes()
    if damage == "missing":
        index.unlink()
    elif damage == "flipped":
        index.write_bytes(good[:40] + bytes([good[40] ^ 1]) + good[41:])
    elif damage == "other ledger":
        decoded = decode_offsets_index(good)
        index.write_bytes(encode_offsets_index(OffsetsIndex(4, decoded.offsets, decoded.data_end,
                                                            decoded.payload_bytes)))  # fmt: skip
    elif damage == "stale size":
        with open(path, "ab") as data:
            data.write(b"\x00" * 3)  # the file is not what the index describes: scanned, and the tail is corrupt
    else:
        index.write_bytes(good[:-7])
    if damage == "stale size":
        with pytest.raises(FormatError, match="corrupt at byte"):
            LedgerFile.open(path, 3, repair=False)
        return
    assert bytes_read_opening(path, monkeypatch) > 50 * 1024  # the scan read the payloads
    assert index.read_bytes() == good  # rewritten, intact
    assert [e.data for e in LedgerFile.open(path, 3, repair=False).read(0, 49)] == payloads
    assert bytes_read_opening(path, monkeypatch) == 16 + HEADER_SIZE


def test_the_first_read_loads_one_chunk_whatever_the_ledger_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "3.log"
    count = 5 * CHUNK_ENTRIES + 17
    payloads = sealed(path, count=count, size=16)
    read = count_preads(monkeypatch)
    ledger = LedgerFile.open(path, 3, repair=False)
    entry = 3 * CHUNK_ENTRIES + 5
    assert ledger.read(entry, entry)[0].data == payloads[entry]
    monkeypatch.undo()
    record = 16 + 16  # an entry's record header and payload here
    assert read[0] == 16 + HEADER_SIZE + CHUNK_ENTRIES * 8 + 4 + record
    assert [e.data for e in ledger.read(count - 3, count - 1)] == payloads[-3:]  # the short last chunk
    assert (ledger.entry_count, ledger.length) == (count, 16 * count)


def test_a_damaged_chunk_falls_back_to_the_scan_when_it_is_needed(tmp_path: Path) -> None:
    path = tmp_path / "3.log"
    payloads = sealed(path, count=2 * CHUNK_ENTRIES, size=8)
    index = index_path(path)
    data = bytearray(index.read_bytes())
    data[HEADER_SIZE + CHUNK_ENTRIES * 8 + 4 + 100] ^= 0xFF  # inside the second chunk
    index.write_bytes(bytes(data))
    ledger = LedgerFile.open(path, 3, repair=False)  # the header is intact: no scan yet
    assert ledger.read(10, 10)[0].data == payloads[10]
    assert [e.data for e in ledger.read(CHUNK_ENTRIES, CHUNK_ENTRIES + 50)] == payloads[
        CHUNK_ENTRIES : CHUNK_ENTRIES + 51
    ]
    assert [e.data for e in ledger.read(0, 2 * CHUNK_ENTRIES - 1)] == payloads


@given(st.lists(st.integers(1, 2**20), max_size=200), st.integers(0, 2**40), st.integers(0, 2**62))
def test_offsets_index_round_trip(gaps: list[int], payload_bytes: int, ledger_id: int) -> None:
    offsets = array("q")
    position = 16
    for gap in gaps:
        offsets.append(position)
        position += gap
    index = OffsetsIndex(ledger_id, offsets, position + 1, payload_bytes)
    assert decode_offsets_index(encode_offsets_index(index)) == index


@given(st.binary(max_size=300))
def test_arbitrary_bytes_are_only_format_errors(data: bytes) -> None:
    with contextlib.suppress(FormatError):
        decode_offsets_index(data)
