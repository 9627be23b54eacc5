"""Segment block headers as Pulsar's reader takes them (issue 41 item 4):
Pulsar's segment from the golden vectors, rewritten with any fill after the
header's fields and with headers longer than 128 bytes (the index's data
header length saying so), reads entry for entry; what Pulsar's writers can
never make (a header under 128 bytes, past its block, or disagreeing with
the index) is refused."""

from __future__ import annotations

import random
import struct
import uuid as uuid_module
from collections.abc import Callable

import pytest

from offload_core.errors import FormatError
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.memory import MemoryDriver
from offload_core.offload import BlobStoreLedgerOffloader
from offload_core.offload.segments.segment_reads import iter_segment_entries
from tests.pulsar_vectors import SegmentVector, load_segment_vectors

(VECTOR,) = load_segment_vectors()
FIELDS = struct.Struct(">Iqqqq")  # magic, header length, block length, first entry id, ledger id


def random_fill(size: int) -> bytes:
    return random.Random(size).randbytes(size)


def rewritten(
    vector: SegmentVector,
    header_length: int,
    fill: Callable[[int], bytes] = random_fill,
    *,
    stated: int | None = None,
    index_says: int | None = None,
) -> tuple[bytes, bytes]:
    """Pulsar's segment with every block header ``header_length`` bytes
    long (fields, then ``fill``), saying ``stated`` (default: its length);
    the index says ``index_says`` (default: the same)."""
    index = v2.decode_index(vector.index)
    data = bytearray()
    offsets = {}
    for _, row in index.blocks:
        block = vector.data[row.offset : index.block_end(row)]
        magic, _, block_length, first, ledger = FIELDS.unpack_from(block)
        grown = block_length - v1.BLOCK_HEADER_LENGTH + header_length
        offsets[row.part_id] = len(data)
        data += FIELDS.pack(magic, header_length if stated is None else stated, grown, first, ledger)
        data += fill(header_length - FIELDS.size) + block[v1.BLOCK_HEADER_LENGTH :]
    said = header_length if index_says is None else index_says
    ledgers = tuple(
        v2.LedgerSection(
            section.ledger_id,
            section.ledger_info,
            tuple(v2.SegmentRow(r.first_entry_id, r.part_id, offsets[r.part_id], said) for r in section.rows),
        )
        for section in index.ledgers
    )
    new_index = v2.SegmentIndex(data_object_length=len(data), ledgers=ledgers, data_header_length=said)
    return bytes(data), v2.encode_index(new_index)


def stored(data: bytes, index: bytes) -> tuple[BlobStoreLedgerOffloader, str]:
    store = MemoryDriver()
    uid = str(uuid_module.uuid4())
    metadata = {v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION}
    store.write(v2.segment_data_key(uid), data, metadata=metadata)
    store.write(v2.segment_index_key(uid), index, metadata=metadata)
    return BlobStoreLedgerOffloader(store, read_buffer_size=512), uid


def read_every_way(offloader: BlobStoreLedgerOffloader, uid: str) -> None:
    """Entry for entry through the read handle (each entry on a cold handle,
    then all in order), the segment walk, and the block decoder."""
    expected = VECTOR.entries
    by_ledger: dict[int, list[tuple[int, bytes]]] = {}
    for ledger_id, entry_id, payload in expected:
        by_ledger.setdefault(ledger_id, []).append((entry_id, payload))
    for ledger_id, entries in by_ledger.items():
        first, last = entries[0][0], entries[-1][0]
        for entry_id, payload in entries:
            handle = offloader.read_segment(uid, ledger_id, last_entry_id=last)
            assert handle.read(entry_id, entry_id)[0].data == payload
        handle = offloader.read_segment(uid, ledger_id, last_entry_id=last)
        assert [(e.entry_id, e.data) for e in handle.read(first, last)] == entries
    segment = offloader.open_segment(uid)
    assert [(e.ledger_id, e.entry_id, e.data) for e in iter_segment_entries(offloader.driver, segment)] == expected


def test_pulsars_segment_itself_reads_as_before() -> None:
    read_every_way(*stored(VECTOR.data, VECTOR.index))


@pytest.mark.parametrize("fill", [random_fill, lambda n: b"\xff" * n], ids=["random", "ones"])
def test_any_fill_after_the_header_fields_is_skipped(fill: Callable[[int], bytes]) -> None:
    read_every_way(*stored(*rewritten(VECTOR, 128, fill)))


@pytest.mark.parametrize("header_length", [129, 256, 4096])
def test_a_longer_header_is_skipped_to_where_the_index_says_entries_start(header_length: int) -> None:
    data, index = rewritten(VECTOR, header_length)
    assert v2.decode_index(index).data_header_length == header_length
    read_every_way(*stored(data, index))


def test_a_header_under_128_bytes_is_refused() -> None:
    index = v2.decode_index(VECTOR.index)
    short = v2.SegmentIndex(index.data_object_length, index.ledgers, data_header_length=127)
    raw = bytearray(VECTOR.index)
    struct.pack_into(">q", raw, 16, 127)  # the index header's data header length
    with pytest.raises(FormatError, match="data header length is 127"):
        v2.decode_index(bytes(raw))
    with pytest.raises(FormatError, match="data header length is 127"):
        v2.encode_index(short)
    block = bytearray(VECTOR.data[:128])
    struct.pack_into(">q", block, 4, 127)
    with pytest.raises(FormatError, match="header length is 127"):
        v2.decode_block_header(bytes(block))


def test_a_header_past_its_block_is_refused() -> None:
    block = bytearray(VECTOR.data[:128])
    (block_length,) = struct.unpack_from(">q", block, 12)
    struct.pack_into(">q", block, 4, block_length + 1)
    with pytest.raises(FormatError, match=f"header length is {block_length + 1}"):
        v2.decode_block_header(bytes(block))


def test_a_block_header_disagreeing_with_the_index_is_refused_not_misread() -> None:
    offloader, uid = stored(*rewritten(VECTOR, 256, stated=200))
    ledger_id, entry_id, _ = VECTOR.entries[0]
    handle = offloader.read_segment(uid, ledger_id, last_entry_id=entry_id)
    with pytest.raises(FormatError, match="header says it is 200 bytes, the index 256"):
        handle.read(entry_id, entry_id)
    with pytest.raises(FormatError, match="header says it is 200 bytes, the index 256"):
        list(iter_segment_entries(offloader.driver, offloader.open_segment(uid)))
