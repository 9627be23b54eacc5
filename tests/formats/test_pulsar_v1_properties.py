"""PIP-17 v1 format properties: round trip, canonical form, robustness."""

from __future__ import annotations

import contextlib

from hypothesis import assume, example, given
from hypothesis import strategies as st

from offload_core.errors import FormatError
from offload_core.formats import pulsar_v1 as v1
from offload_core.testing.strategies import ledger_payloads, v1_blocks, v1_indexes


@given(st.integers(128, 2**63 - 1), st.integers(0, 2**63 - 1))
def test_header_round_trip(length: int, first: int) -> None:
    header = v1.BlockHeader(length, first)
    encoded = v1.encode_block_header(header)
    assert len(encoded) == 128
    assert v1.decode_block_header(encoded) == header


@given(v1_blocks())
def test_block_round_trip_and_canonical_form(block: tuple[int, int, list[bytes]]) -> None:
    first, size, payloads = block
    encoded = v1.encode_block(first, size, payloads)
    assert len(encoded) == size
    decoded = v1.decode_block(encoded)
    assert decoded.entries == tuple((first + n, p) for n, p in enumerate(payloads))
    assert (
        v1.encode_block(decoded.header.first_entry_id, decoded.header.block_length, [p for _, p in decoded.entries])
        == encoded
    )


@given(v1_indexes())
def test_index_round_trip_and_canonical_form(index: v1.Index) -> None:
    encoded = v1.encode_index(index)
    assert v1.decode_index(encoded) == index
    assert v1.encode_index(v1.decode_index(encoded)) == encoded


@given(st.lists(st.binary(max_size=300), min_size=1, max_size=30), st.integers(140, 1200))
def test_data_blocks_hold_every_entry_once_in_order(payloads: list[bytes], max_block: int) -> None:
    assume(all(len(p) <= max_block - 140 for p in payloads))
    blocks = list(
        v1.encode_data_blocks(
            payloads, entry_count=len(payloads), ledger_length=sum(map(len, payloads)), max_block_size=max_block
        )
    )
    decoded = [entry for block in blocks for entry in v1.decode_block(block.data).entries]
    assert decoded == list(enumerate(payloads))
    assert all(len(block.data) == max_block for block in blocks[:-1])
    assert [block.entry.part_id for block in blocks] == list(range(1, len(blocks) + 1))


@given(v1_indexes(max_blocks=300), st.data())
def test_lookup_is_a_floor_search_over_the_block_table(index: v1.Index, data: st.DataObject) -> None:
    last = index.last_entry_id
    firsts = [entry.first_entry_id for entry in index.entries]
    probes = [0, last, *firsts, *(f - 1 for f in firsts if f > 0), *(f + 1 for f in firsts if f < last)]
    probes += data.draw(st.lists(st.integers(0, last), max_size=20))
    for entry_id in probes:
        expected = [entry for entry in index.entries if entry.first_entry_id <= entry_id][-1]
        assert index.lookup(entry_id) == expected


@given(ledger_payloads(max_block_size=256 * 1024), st.sampled_from([4096, 65536, 256 * 1024]))
def test_ledgers_of_many_blocks_round_trip(payloads: list[bytes], block: int) -> None:
    assume(all(len(p) <= block - 140 for p in payloads))
    blocks = list(v1.encode_data_blocks(payloads, entry_count=len(payloads), ledger_length=sum(map(len, payloads)),
                                        max_block_size=block))  # fmt: skip
    index = v1.Index(
        data_object_length=sum(len(b.data) for b in blocks),
        ledger_metadata=v1.closed_ledger_metadata(
            length=sum(map(len, payloads)), last_entry_id=len(payloads) - 1
        ).SerializeToString(),
        entries=tuple(b.entry for b in blocks),
    )
    decoded = {entry_id: payload for b in blocks for entry_id, payload in v1.decode_block(b.data).entries}
    assert [decoded[n] for n in range(len(payloads))] == payloads
    for entry_id in range(0, len(payloads), max(1, len(payloads) // 50)):
        block_of = index.lookup(entry_id)
        assert any(e == entry_id for e, _ in v1.decode_block(blocks[block_of.part_id - 1].data).entries)


def only_format_errors(decode, data: bytes) -> None:  # type: ignore[no-untyped-def]
    with contextlib.suppress(FormatError):
        decode(data)


@given(st.binary(max_size=400))
@example(bytes.fromhex("FBDBABCB00000000000000807FFFFFFFFFFFFFFF0000000000000000") + bytes(100))
@example(bytes.fromhex("DE47DE477FFFFFFF00" * 16 + "7FFFFFFF7FFFFFFF"))
def test_arbitrary_bytes_raise_only_format_error(data: bytes) -> None:
    only_format_errors(v1.decode_block_header, data)
    only_format_errors(v1.decode_block, data)
    only_format_errors(v1.decode_index, data)


@given(v1_blocks(), st.data())
def test_truncated_blocks_raise_format_error(block: tuple[int, int, list[bytes]], data: st.DataObject) -> None:
    encoded = v1.encode_block(*block)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    try:
        v1.decode_block(encoded[:cut])
    except FormatError:
        return
    raise AssertionError("a truncated block decoded")


@given(v1_indexes(), st.data())
def test_truncated_indexes_raise_format_error(index: v1.Index, data: st.DataObject) -> None:
    encoded = v1.encode_index(index)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    try:
        v1.decode_index(encoded[:cut])
    except FormatError:
        return
    raise AssertionError("a truncated index decoded")


@given(v1_blocks(), v1_indexes(), st.data())
def test_bit_flips_raise_only_format_error(
    block: tuple[int, int, list[bytes]], index: v1.Index, data: st.DataObject
) -> None:
    for encoded, decode in ((v1.encode_block(*block), v1.decode_block), (v1.encode_index(index), v1.decode_index)):
        flipped = bytearray(encoded)
        for _ in range(data.draw(st.integers(1, 3))):
            bit = data.draw(st.integers(0, len(flipped) * 8 - 1))
            flipped[bit // 8] ^= 1 << (bit % 8)
        only_format_errors(decode, bytes(flipped))
