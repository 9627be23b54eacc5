"""A segment written by Apache Pulsar's own streaming-offload classes: we
read it entry for entry, and write the same bytes from the same entries."""

from __future__ import annotations

import hashlib

import pytest

from offload_core.errors import FormatError
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from tests.pulsar_vectors import SegmentVector, load_segment_vectors

VECTORS = load_segment_vectors()


@pytest.fixture(params=VECTORS, ids=[v.name for v in VECTORS])
def vector(request: pytest.FixtureRequest) -> SegmentVector:
    return request.param  # type: ignore[no-any-return]


def test_there_is_a_segment_vector() -> None:
    assert [v.name for v in VECTORS] == ["v2-two-ledgers"]


def test_fixture_files_are_intact(vector: SegmentVector) -> None:
    assert hashlib.sha256(vector.data).hexdigest() == vector.spec["files"]["data"]["sha256"]
    assert hashlib.sha256(vector.index).hexdigest() == vector.spec["files"]["index"]["sha256"]


def test_index_matches_the_manifest(vector: SegmentVector) -> None:
    index = v2.decode_index(vector.index)
    expected = vector.spec["expected"]
    assert index.data_object_length == expected["index_data_object_length"] == len(vector.data)
    assert index.data_header_length == expected["index_data_header_length"]
    assert [section.ledger_id for section in index.ledgers] == expected["index_ledger_order"]
    assert [(ledger_id, row.first_entry_id, row.part_id, row.offset) for ledger_id, row in index.blocks] == [
        (b["ledger_id"], b["first_entry_id"], b["part_id"], b["offset"]) for b in expected["blocks"]
    ]
    for ledger in vector.spec["ledgers"]:
        section = index.section(ledger["ledger_id"])
        assert section.ledger_info.hex() == ledger["ledger_info"]["hex"]
        info = section.info()
        assert info.ledgerId == ledger["ledger_info"]["ledgerId"]
        assert info.entries == ledger["ledger_info"]["entries"]
        assert info.timestamp == ledger["ledger_info"]["timestamp"]
    assert v2.encode_index(index) == vector.index


def test_every_entry_is_recovered_block_by_block(vector: SegmentVector) -> None:
    index = v2.decode_index(vector.index)
    recovered = []
    for block_spec, (ledger_id, row) in zip(vector.spec["expected"]["blocks"], index.blocks, strict=True):
        block = v2.decode_block(vector.data[row.offset : index.block_end(row)])
        assert block.header.ledger_id == ledger_id == block_spec["ledger_id"]
        assert block.header.first_entry_id == row.first_entry_id
        assert block.header.block_length == block_spec["block_len"]
        assert block.last_entry_id == block_spec["end_entry_id"]
        assert block.padding_start == block_spec["padding_start"]
        assert sum(len(payload) for _, payload in block.entries) == block_spec["entry_bytes"]
        recovered.extend((ledger_id, entry_id, payload) for entry_id, payload in block.entries)
    assert recovered == vector.entries
    assert len(recovered) == vector.spec["entry_count"]


def test_we_write_the_same_segment_from_the_same_entries(vector: SegmentVector) -> None:
    blocks = list(
        v2.encode_segment_blocks(iter(vector.entries), streaming_block_size=vector.spec["streaming_block_size"])
    )
    assert b"".join(block.data for block in blocks) == vector.data
    decoded = v2.decode_index(vector.index)
    infos = {section.ledger_id: section.ledger_info for section in decoded.ledgers}
    index = v2.index_for_blocks(
        [(block.ledger_id, block.row) for block in blocks], data_object_length=len(vector.data), ledger_infos=infos
    )
    assert index == decoded
    assert v2.encode_index(index) == vector.index


def test_we_write_pulsars_ledger_infos(vector: SegmentVector) -> None:
    for ledger in vector.spec["ledgers"]:
        info = ledger["ledger_info"]
        first, last = ledger["entries_in_segment"]
        written = v2.ledger_info_bytes(
            ledger["ledger_id"],
            last_entry_id=last,
            closed=ledger["state"] == "closed",
            entries=info["entries"],
            size=info.get("size", 0),
            timestamp_ms=info["timestamp"],
        )
        assert written.hex() == info["hex"]


def test_a_v1_reader_given_a_v2_object_says_so(vector: SegmentVector) -> None:
    with pytest.raises(FormatError, match=r"streaming-offload \(PIP-76, v2\) segment index"):
        v1.decode_index(vector.index)
    with pytest.raises(FormatError, match=r"streaming-offload \(PIP-76, v2\) segment block"):
        v1.decode_block_header(vector.data)


def test_a_v2_reader_given_a_v1_object_says_so() -> None:
    index = v1.encode_index(
        v1.Index(
            data_object_length=128,
            ledger_metadata=v1.closed_ledger_metadata(length=1, last_entry_id=0).SerializeToString(),
            entries=(v1.IndexEntry(0, 1, 0),),
        )
    )
    with pytest.raises(FormatError, match=r"ledger-offload \(v1\) index"):
        v2.decode_index(index)
    with pytest.raises(FormatError, match=r"ledger-offload \(v1\) data block"):
        v2.decode_block_header(v1.encode_block(0, 200, [b"x"]))


def test_keys_are_pulsars() -> None:
    import json

    from tests.pulsar_vectors import VECTORS as DIRECTORY

    keys = json.loads((DIRECTORY / "manifest.json").read_text())["object_keys"]
    uuid = keys["ledger_offload"][0]["uuid"]
    assert v2.segment_data_key(uuid) == keys["streaming_data_key"]
    assert v2.segment_index_key(uuid) == keys["streaming_index_key"]
    assert v2.parse_segment_key("topic/" + keys["streaming_index_key"]) == v2.SegmentKey("topic/", uuid, True)
    assert v2.parse_segment_key(keys["streaming_data_key"]) == v2.SegmentKey("", uuid, False)
    assert v1.parse_key(keys["streaming_index_key"]) is None
    for ledger_key in keys["ledger_offload"]:
        assert v2.parse_segment_key(ledger_key["data_key"]) is None
        assert v2.parse_segment_key(ledger_key["index_key"]) is None
