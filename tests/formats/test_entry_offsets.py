"""The entry-offsets section: round trip, canonical form, robustness, and
the positions it gives."""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import FormatError
from offload_core.formats import entry_offsets
from offload_core.formats import pulsar_v1 as v1

blocks_of_lengths = st.lists(st.lists(st.integers(0, 2**31 - 1), max_size=40), max_size=12)


@given(blocks_of_lengths)
def test_round_trip_and_canonical_form(blocks: list[list[int]]) -> None:
    encoded = entry_offsets.encode_section(blocks)
    decoded = entry_offsets.decode_section(encoded)
    assert decoded.block_count == len(blocks)
    assert [list(decoded.block_lengths(n)) for n in range(len(blocks))] == blocks
    assert entry_offsets.encode_section([decoded.block_lengths(n) for n in range(decoded.block_count)]) == encoded
    assert entry_offsets.is_section(encoded)


@given(st.lists(st.integers(0, 5000), min_size=1, max_size=50), st.integers(0, 2**40))
def test_positions_are_where_the_writer_put_each_entry(lengths: list[int], block_offset: int) -> None:
    section = entry_offsets.decode_section(entry_offsets.encode_section([lengths]))
    payloads = [bytes(n) for n in lengths]
    block = v1.encode_block(0, v1.BLOCK_HEADER_LENGTH + sum(12 + n for n in lengths), payloads)
    data_offset = block_offset + v1.BLOCK_HEADER_LENGTH
    for entry_id in range(len(lengths)):
        position = section.position(0, entry_id, data_offset)
        length, found = struct.unpack_from(">iq", block, position - block_offset)
        assert (length, found) == (lengths[entry_id], entry_id) == (section.length(0, entry_id), entry_id)
    assert section.position(0, len(lengths), data_offset) - block_offset == len(block)
    assert section.content_length(0) == len(block) - v1.BLOCK_HEADER_LENGTH


@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_format_error(data: bytes) -> None:
    with contextlib.suppress(FormatError):
        entry_offsets.decode_section(data)


@given(blocks_of_lengths, st.data())
def test_truncation_and_bit_flips_are_caught(blocks: list[list[int]], data: st.DataObject) -> None:
    encoded = bytearray(entry_offsets.encode_section(blocks))
    cut = data.draw(st.integers(0, len(encoded) - 1))
    with pytest.raises(FormatError):
        entry_offsets.decode_section(bytes(encoded[:cut]))
    bit = data.draw(st.integers(0, 8 * len(encoded) - 1))
    encoded[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(FormatError):  # the checksum, or the framing before it, catches every single flip
        entry_offsets.decode_section(bytes(encoded))


def test_a_length_over_the_format_limit_is_refused() -> None:
    with pytest.raises(FormatError, match="over the format's limit"):
        entry_offsets.encode_section([[2**31]])


@pytest.mark.parametrize("length", [2**31, 2**32 - 1])
def test_a_section_giving_a_length_over_the_limit_is_refused(length: int) -> None:
    """A sound section (checksum and all) whose writer put a length over
    2^31 - 1 in the middle of a block."""
    import struct

    import google_crc32c

    body = struct.pack(">IIIII", 1, 3, 10, length, 20)
    head = struct.pack(">II", entry_offsets.MAGIC, len(body) + 4)
    section = head + body + struct.pack(">I", google_crc32c.value(head + body))
    with pytest.raises(FormatError, match=f"an entry of {length} bytes, over 2\\^31-1"):
        entry_offsets.decode_section(section)
    assert section[:-8] == entry_offsets.encode_section([[10, 2**31 - 1, 20]])[:-8].replace(
        struct.pack(">I", 2**31 - 1), struct.pack(">I", length)
    )  # the same section as ours but for that length: only the length is refused


def test_the_index_keeps_what_follows_its_block_table_and_writes_it_back() -> None:
    index = v1.Index(
        data_object_length=300,
        ledger_metadata=v1.closed_ledger_metadata(length=10, last_entry_id=1).SerializeToString(),
        entries=(v1.IndexEntry(0, 1, 0),),
        trailer=entry_offsets.encode_section([[4, 6]]),
    )
    encoded = v1.encode_index(index)
    (stated_length,) = struct.unpack_from(">i", encoded, 4)
    assert stated_length == len(encoded) - len(index.trailer)  # Pulsar's length covers its own part only
    assert v1.decode_index(encoded) == index
