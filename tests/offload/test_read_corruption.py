"""Every field of a real offloaded ledger, corrupted one at a time, is caught
on the read path with a :class:`FormatError` naming where."""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from offload_core import BlobStoreLedgerOffloader, FormatError, InMemoryReadHandle
from offload_core.formats import pulsar_v1 as v1
from offload_core.memory import MemoryDriver
from offload_core.testing.faults import Fault, FaultyDriver

UUID = str(uuid.UUID("0a7c4f52-8e0e-4a53-9a4e-bb0c7f3c1d20"))
LEDGER = 4
ENTRIES = [random.Random(4).randbytes(n % 97 + 20) for n in range(120)]


@dataclass(frozen=True)
class Stored:
    driver: MemoryDriver
    data: bytearray
    index: v1.Index

    @property
    def second(self) -> v1.IndexEntry:
        return self.index.entries[1]

    def last_entry_of_first_block(self) -> tuple[int, int]:
        """Id and offset just past the first block's last entry."""
        position, entry_id = v1.BLOCK_HEADER_LENGTH, 0
        while entry_id < self.second.first_entry_id:
            (length,) = struct.unpack_from(">i", self.data, position)
            position += v1.ENTRY_HEADER_LENGTH + length
            entry_id += 1
        return entry_id - 1, position


def offloaded() -> Stored:
    driver = MemoryDriver()
    BlobStoreLedgerOffloader(driver, max_block_size=1024).offload(InMemoryReadHandle(LEDGER, ENTRIES), UUID)
    data = bytearray(driver.read(v1.data_key(UUID, LEDGER)))
    return Stored(driver, data, v1.decode_index(driver.read(v1.index_key(UUID, LEDGER))))


def put(stored: Stored, offset: int, fmt: str, value: int) -> None:
    struct.pack_into(fmt, stored.data, offset, value)


def block_magic(s: Stored) -> tuple[int, int]:
    put(s, s.second.offset, ">I", 0xFBDBABCC)
    return s.second.first_entry_id, s.second.offset


def block_header_length(s: Stored) -> tuple[int, int]:
    put(s, s.second.offset + 4, ">q", 64)
    return s.second.first_entry_id, s.second.offset


def block_length(s: Stored) -> tuple[int, int]:
    put(s, s.second.offset + 12, ">q", 4096)
    return s.second.first_entry_id, s.second.offset


def block_first_entry(s: Stored) -> tuple[int, int]:
    put(s, s.second.offset + 20, ">q", s.second.first_entry_id + 1)
    return s.second.first_entry_id, s.second.offset


def block_fill(s: Stored) -> tuple[int, int]:
    s.data[s.second.offset + 100] = 1
    return s.second.first_entry_id, s.second.offset


def entry_length_past_block(s: Stored) -> tuple[int, int]:
    put(s, s.second.data_offset, ">i", 5000)
    return s.second.first_entry_id, s.second.data_offset


def entry_length_negative(s: Stored) -> tuple[int, int]:
    put(s, s.second.data_offset, ">i", -1)
    return s.second.first_entry_id, s.second.data_offset


def entry_length_shortened(s: Stored) -> tuple[int, int]:
    (length,) = struct.unpack_from(">i", s.data, s.second.data_offset)
    put(s, s.second.data_offset, ">i", length - 3)
    return s.second.first_entry_id, s.second.data_offset + v1.ENTRY_HEADER_LENGTH + length - 3


def entry_id(s: Stored) -> tuple[int, int]:
    put(s, s.second.data_offset + 4, ">q", 999)
    return s.second.first_entry_id, s.second.data_offset


def padding_after_last_entry(s: Stored) -> tuple[int, int]:
    last, position = s.last_entry_of_first_block()
    s.data[position + 1] = 0x00  # still a negative length, no longer the pattern
    return last, position


CORRUPTIONS: dict[str, tuple[Callable[[Stored], tuple[int, int]], str]] = {
    "block magic": (block_magic, "magic"),
    "block header length": (block_header_length, "header length is 64"),
    "block length": (block_length, "header says 4096 bytes"),
    "block first entry id": (block_first_entry, "header starts at entry"),
    "block header fill": (block_fill, "fill is not all zero"),
    "entry length past its block": (entry_length_past_block, "runs past its block"),
    "entry length negative": (entry_length_negative, "is not in block 2"),
    "entry length shortened": (entry_length_shortened, "framing is broken"),
    "entry id": (entry_id, "found entry id 999"),
    "padding after a block's last entry": (padding_after_last_entry, "neither an entry nor padding"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_a_corrupted_data_field_raises_naming_the_offset(name: str) -> None:
    stored = offloaded()
    corrupt, message = CORRUPTIONS[name]
    target, offset = corrupt(stored)
    key = v1.data_key(UUID, LEDGER)
    stored.driver.write(key, bytes(stored.data), metadata={v1.FORMAT_VERSION_KEY: "1"})
    handle = BlobStoreLedgerOffloader(stored.driver, read_buffer_size=256).read_offloaded(LEDGER, UUID)
    with pytest.raises(FormatError, match=rf"object '{key}', byte offset {offset}: .*{message}"):
        handle.read(target, target)


@pytest.mark.parametrize("which", ["data", "index"])
@pytest.mark.parametrize("version", [None, "2", ""])
def test_format_version_of_either_object(which: str, version: str | None) -> None:
    stored = offloaded()
    key = v1.data_key(UUID, LEDGER) if which == "data" else v1.index_key(UUID, LEDGER)
    metadata = {} if version is None else {v1.FORMAT_VERSION_KEY: version}
    stored.driver.write(key, stored.driver.read(key), metadata=metadata)
    with pytest.raises(FormatError, match=rf"object '{key}': format version metadata .* is {version!r}"):
        BlobStoreLedgerOffloader(stored.driver).read_offloaded(LEDGER, UUID)


def index_with(stored: Stored, **changes: object) -> bytes:
    fields = {"data_object_length": stored.index.data_object_length, "entries": stored.index.entries}
    fields.update(changes)
    raw = bytearray(
        struct.pack(">Iiqqii", v1.INDEX_MAGIC, 0, fields["data_object_length"], 128, len(fields["entries"]),  # type: ignore[arg-type]
                    len(stored.index.ledger_metadata))
    )  # fmt: skip
    raw += stored.index.ledger_metadata
    for row in fields["entries"]:  # type: ignore[attr-defined]
        raw += struct.pack(">qiq", row.first_entry_id, row.part_id, row.offset)
    struct.pack_into(">i", raw, 4, len(raw))
    return bytes(raw)


def lowered_last_entry(stored: Stored) -> bytes:
    metadata = stored.index.metadata()
    metadata.lastEntryId = stored.index.entries[-1].first_entry_id - 1
    raw = bytearray(v1.encode_index(stored.index)[:32])
    body = metadata.SerializeToString()
    struct.pack_into(">i", raw, 28, len(body))
    raw += body
    for row in stored.index.entries:
        raw += struct.pack(">qiq", row.first_entry_id, row.part_id, row.offset)
    struct.pack_into(">i", raw, 4, len(raw))
    return bytes(raw)


INDEX_CORRUPTIONS: dict[str, tuple[Callable[[Stored], bytes], str]] = {
    "last entry before the last block": (lowered_last_entry, "is before the last block's first entry"),
    "part ids out of order": (
        lambda s: index_with(
            s, entries=(s.index.entries[0], v1.IndexEntry(s.second.first_entry_id, 3, s.second.offset))
        ),
        "part ids run 1, 2, 3",
    ),
    "offsets going backwards": (
        lambda s: index_with(s, entries=(s.index.entries[0], v1.IndexEntry(s.second.first_entry_id, 2, 64))),
        "does not follow",
    ),
    "first block not at 0": (
        lambda s: index_with(s, entries=(v1.IndexEntry(0, 1, 128), *s.index.entries[1:])),
        "first index block starts at offset 128",
    ),
}


@pytest.mark.parametrize("name", list(INDEX_CORRUPTIONS))
def test_a_broken_index_invariant_is_refused(name: str) -> None:
    stored = offloaded()
    build, message = INDEX_CORRUPTIONS[name]
    key = v1.index_key(UUID, LEDGER)
    stored.driver.write(key, build(stored), metadata={v1.FORMAT_VERSION_KEY: "1"})
    with pytest.raises(FormatError, match=message):
        BlobStoreLedgerOffloader(stored.driver).read_offloaded(LEDGER, UUID)


def test_a_short_read_from_the_store_is_caught() -> None:
    stored = offloaded()
    # The data key is a prefix of the index key: let the index read (the first) through.
    short = FaultyDriver(stored.driver, [Fault("read", key=v1.data_key(UUID, LEDGER), short=True, times=None, nth=2)])
    handle = BlobStoreLedgerOffloader(short, read_buffer_size=512).read_offloaded(LEDGER, UUID)
    with pytest.raises(FormatError, match=r"byte offset 0: data object ends early \(256 of 512 bytes came back\)"):
        handle.read(0, 0)
