"""Objects written by Apache Pulsar itself: we read them, and write the same."""

from __future__ import annotations

import hashlib

import pytest

from offload_core.errors import InvalidRangeError
from offload_core.formats import pulsar_v1 as v1
from tests.pulsar_vectors import Vector, load_vectors

VECTORS = load_vectors()


@pytest.fixture(params=VECTORS, ids=[v.name for v in VECTORS])
def vector(request: pytest.FixtureRequest) -> Vector:
    return request.param  # type: ignore[no-any-return]


def test_fixture_files_are_intact(vector: Vector) -> None:
    assert hashlib.sha256(vector.data).hexdigest() == vector.spec["files"]["data"]["sha256"]
    assert hashlib.sha256(vector.index).hexdigest() == vector.spec["files"]["index"]["sha256"]


def test_index_matches_the_manifest(vector: Vector) -> None:
    index = v1.decode_index(vector.index)
    expected = vector.spec["expected"]
    assert index.data_object_length == expected["index_data_object_length"] == len(vector.data)
    assert [(e.first_entry_id, e.part_id, e.offset) for e in index.entries] == [
        (b["first_entry_id"], b["part_id"], b["offset"]) for b in expected["blocks"]
    ]
    assert index.ledger_metadata.hex() == vector.spec["ledger_metadata"]["hex"]
    assert index.last_entry_id == vector.spec["ledger_metadata"]["lastEntryId"]
    assert v1.encode_index(index) == vector.index


def test_every_entry_is_recovered(vector: Vector) -> None:
    index = v1.decode_index(vector.index)
    recovered: list[bytes] = []
    for block_spec, entry in zip(vector.spec["expected"]["blocks"], index.entries, strict=True):
        block = v1.decode_block(vector.data[entry.offset : index.block_end(entry)])
        assert block.header.first_entry_id == entry.first_entry_id
        assert block.padding_start == block_spec["padding_start"]
        recovered.extend(payload for _, payload in block.entries)
    assert recovered == vector.entries


def test_we_write_the_same_data_object_from_the_same_entries(vector: Vector) -> None:
    entries = vector.entries
    blocks = list(
        v1.encode_data_blocks(
            iter(entries),
            entry_count=len(entries),
            ledger_length=sum(map(len, entries)),
            max_block_size=vector.spec["max_block_size"],
        )
    )
    assert b"".join(block.data for block in blocks) == vector.data
    assert tuple(block.entry for block in blocks) == v1.decode_index(vector.index).entries


def test_out_of_range_lookup_matches_pulsar(vector: Vector) -> None:
    index = v1.decode_index(vector.index)
    beyond = len(vector.entries)
    with pytest.raises(InvalidRangeError, match=vector.spec["expected"]["pulsar_out_of_range_message"]):
        index.lookup(beyond)
