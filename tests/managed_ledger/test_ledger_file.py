"""Hot-tier ledger files: durability and torn-tail repair."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import ConfigError, FormatError, InvalidRangeError, OffloadError
from offload_core.managed_ledger.hot.hot_records import RECORD, checksum, parse_records
from offload_core.managed_ledger.hot.ledger_file import FsyncPolicy, LedgerFile

PAYLOADS = [b"", b"a", b"bb" * 100, bytes(range(256)), b"tail"]


def filled(path: Path, policy: FsyncPolicy = FsyncPolicy.ALWAYS) -> None:
    ledger = LedgerFile.create(path, 7, fsync=policy)
    for payload in PAYLOADS:
        ledger.append(payload)
    ledger.close()


@pytest.mark.parametrize("policy", list(FsyncPolicy))
def test_round_trip_under_every_fsync_policy(tmp_path: Path, policy: FsyncPolicy) -> None:
    filled(tmp_path / "7.log", policy)
    ledger = LedgerFile.open(tmp_path / "7.log", 7, repair=False)
    assert [e.data for e in ledger.read(0, 4)] == PAYLOADS
    assert ledger.read(2, 3)[1].entry_id == 3
    assert (ledger.entry_count, ledger.length) == (5, sum(map(len, PAYLOADS)))


def test_the_file_is_the_documented_layout_with_zlibs_crc32(tmp_path: Path) -> None:
    """Byte for byte, with the checksum computed by zlib: files written
    before the checksum moved to ISA-L (same CRC, faster) read back, and
    theirs is the format the module documents."""
    filled(tmp_path / "7.log")
    expected = b"OLEDGER1" + struct.pack(">q", 7)
    for entry_id, payload in enumerate(PAYLOADS):
        crc = zlib.crc32(payload, zlib.crc32(struct.pack(">q", entry_id)))
        expected += struct.pack(">iqI", len(payload), entry_id, crc) + payload
    assert (tmp_path / "7.log").read_bytes() == expected


@given(st.integers(0, 2**63 - 1), st.binary(max_size=5000))
def test_the_record_checksum_is_zlibs_crc32(entry_id: int, payload: bytes) -> None:
    assert checksum(entry_id, payload) == zlib.crc32(payload, zlib.crc32(struct.pack(">q", entry_id)))
    assert checksum(entry_id, memoryview(payload)) == checksum(entry_id, payload)


def test_create_refuses_an_existing_file(tmp_path: Path) -> None:
    filled(tmp_path / "7.log")
    with pytest.raises(OffloadError, match="already exists"):
        LedgerFile.create(tmp_path / "7.log", 7)


@pytest.mark.parametrize("cut", [1, 5, 15, 16, 17, 20])
def test_torn_tail_is_cut_at_the_last_whole_entry(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "7.log"
    filled(path)
    size = path.stat().st_size
    os.truncate(path, size - cut)  # the last record ("tail", 16 + 4 bytes) is torn
    repaired = LedgerFile.open(path, 7, repair=True)
    assert [e.data for e in repaired.read(0, repaired.last_entry_id)] == PAYLOADS[:4]
    assert repaired.append(b"after") == 4
    repaired.close()
    assert [e.data for e in LedgerFile.open(path, 7, repair=False).read(0, 4)] == [*PAYLOADS[:4], b"after"]


@pytest.mark.parametrize("garbage", [b"\x00", b"\xff" * 40, b"\x00\x00\x00\x04" + b"\x00" * 8 + b"\x00" * 8])
def test_garbage_after_the_last_entry_is_cut(tmp_path: Path, garbage: bytes) -> None:
    path = tmp_path / "7.log"
    filled(path)
    with open(path, "ab") as out:
        out.write(garbage)
    with pytest.raises(FormatError, match="corrupt"):
        LedgerFile.open(path, 7, repair=False)
    assert LedgerFile.open(path, 7, repair=True).entry_count == 5


def test_flipped_byte_in_a_sealed_ledger_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "7.log"
    filled(path)
    data = bytearray(path.read_bytes())
    data[100] ^= 1  # inside the payload of entry 2 (header 16 + records of 16 and 17 bytes + 16)
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="checksum mismatch"):
        LedgerFile.open(path, 7, repair=False)


def test_wrong_ledger_file_is_refused(tmp_path: Path) -> None:
    filled(tmp_path / "7.log")
    with pytest.raises(FormatError, match="not the hot-tier file of ledger 8"):
        LedgerFile.open(tmp_path / "7.log", 8, repair=False)


def test_reads_outside_the_ledger_raise(tmp_path: Path) -> None:
    filled(tmp_path / "7.log")
    ledger = LedgerFile.open(tmp_path / "7.log", 7, repair=False)
    for first, last in [(-1, 0), (3, 2), (0, 5)]:
        with pytest.raises(InvalidRangeError):
            ledger.read(first, last)


def test_a_detached_read_outlives_the_file_and_its_deletion(tmp_path: Path) -> None:
    """What a reader located under the ledger's lock it reads after the
    lock is let go: a seal closing the file or the hot copy's deletion
    meanwhile does not disturb it."""
    filled(tmp_path / "7.log")
    ledger = LedgerFile.open(tmp_path / "7.log", 7, repair=False)
    records = ledger.detach(1, 3)
    ledger.close()
    os.unlink(tmp_path / "7.log")
    assert [bytes(p) for p in records.payloads()] == PAYLOADS[1:4]


@pytest.mark.parametrize("flip", range(16, 16 + 16 * 5 + sum(map(len, PAYLOADS))))
def test_a_flipped_byte_is_caught_by_a_detached_read(tmp_path: Path, flip: int) -> None:
    path = tmp_path / "7.log"
    filled(path)
    ledger = LedgerFile.open(path, 7, repair=False)
    data = bytearray(path.read_bytes())
    data[flip] ^= 0x40
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="ledger 7 is corrupt"):
        ledger.detach(0, 4).payloads()


def records_of(payloads: list[bytes], first: int = 0) -> bytes:
    return b"".join(RECORD.pack(len(p), first + i, checksum(first + i, p)) + p for i, p in enumerate(payloads))


def test_parsed_records_are_the_payloads_and_nothing_else_passes() -> None:
    """What a streaming worker reads: exactly the run's records; a chunk
    cut anywhere, one with bytes after its last record, or one asked for
    more or fewer entries than it holds is refused."""
    chunk = records_of(PAYLOADS, first=5)
    assert [bytes(p) for p in parse_records(chunk, 7, 5, 9, "p")] == PAYLOADS
    assert parse_records(b"", 7, 5, 4, "p") == []
    for cut in range(len(chunk)):
        with pytest.raises(FormatError, match="ledger 7 is corrupt"):
            parse_records(chunk[:cut], 7, 5, 9, "p")
    for wrong in [chunk + b"x", chunk + chunk[:16]]:
        with pytest.raises(FormatError, match="corrupt after entry 9"):
            parse_records(wrong, 7, 5, 9, "p")
    with pytest.raises(FormatError, match="corrupt at entry 10"):
        parse_records(chunk, 7, 5, 10, "p")
    with pytest.raises(FormatError, match="corrupt after entry 8"):
        parse_records(chunk, 7, 5, 8, "p")
    negative = bytearray(chunk)
    negative[0:4] = struct.pack(">i", -1)
    with pytest.raises(FormatError, match="corrupt at entry 5"):
        parse_records(bytes(negative), 7, 5, 9, "p")


def test_fsync_policy_parsing() -> None:
    assert FsyncPolicy.parse("Batch") is FsyncPolicy.BATCH
    with pytest.raises(ConfigError, match="always, batch, none"):
        FsyncPolicy.parse("sometimes")


@pytest.mark.parametrize("written", [0, 1, 8, 15])
def test_a_file_header_torn_at_creation_is_a_ledger_of_no_entries(tmp_path: Path, written: int) -> None:
    """A crash between creating the file and writing its whole header
    (the metadata already names the ledger) leaves a prefix of the header:
    recovery completes it; a sealed ledger's open still refuses it."""
    path = tmp_path / "7.log"
    path.write_bytes((b"OLEDGER1" + struct.pack(">q", 7))[:written])
    with pytest.raises(FormatError, match="not the hot-tier file of ledger 7"):
        LedgerFile.open(path, 7, repair=False)
    repaired = LedgerFile.open(path, 7, repair=True)
    assert repaired.entry_count == 0
    assert repaired.append(b"first") == 0
    repaired.close()
    assert [e.data for e in LedgerFile.open(path, 7, repair=False).read(0, 0)] == [b"first"]


@pytest.mark.parametrize("start", [b"X", b"OLEDGER2", b"OLEDGER1\x01"])
def test_a_short_file_that_is_not_a_torn_header_is_refused(tmp_path: Path, start: bytes) -> None:
    path = tmp_path / "7.log"
    path.write_bytes(start)
    with pytest.raises(FormatError, match="not the hot-tier file of ledger 7"):
        LedgerFile.open(path, 7, repair=True)
    assert path.read_bytes() == start  # left as it was, for whoever looks into it
