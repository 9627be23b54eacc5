"""PIP-76 v2 format properties: round trip, canonical form, robustness."""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from offload_core.errors import FormatError
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.formats.pulsar_v1 import padding
from offload_core.testing.strategies import segment_entries, v2_indexes


def only_format_errors(decode: Callable[[bytes], Any], data: bytes) -> None:
    with contextlib.suppress(FormatError):
        decode(data)


@given(st.integers(128, 2**63 - 1), st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1))
def test_header_round_trip(length: int, first: int, ledger: int) -> None:
    header = v2.StreamingBlockHeader(length, first, ledger)
    encoded = v2.encode_block_header(header)
    assert len(encoded) == 128
    assert v2.decode_block_header(encoded) == header


@given(segment_entries(), st.integers(140, 2000))
def test_segments_hold_every_entry_once_in_order(entries: list[tuple[int, int, bytes]], size: int) -> None:
    blocks = list(v2.encode_segment_blocks(iter(entries), streaming_block_size=size))
    decoded = []
    offset = 0
    for part, block in enumerate(blocks, start=1):
        assert (block.row.part_id, block.row.offset) == (part, offset)
        content = 128 + sum(12 + len(p) for lid, e, p in entries if lid == block.ledger_id and
                            block.row.first_entry_id <= e <= block.last_entry_id)  # fmt: skip
        assert len(block.data) == max(size, content)
        parsed = v2.decode_block(block.data)
        assert parsed.header.ledger_id == block.ledger_id
        assert parsed.last_entry_id == block.last_entry_id
        # Only the last entry of a block reaches the size; a block ends
        # early only where its ledger ends.
        payloads = [len(p) for _, p in parsed.entries]
        assert sum(payloads[:-1]) < size
        if sum(payloads) < size and part < len(blocks):
            assert blocks[part].ledger_id != block.ledger_id
        decoded.extend((block.ledger_id, entry_id, payload) for entry_id, payload in parsed.entries)
        offset += len(block.data)
    assert decoded == entries


@given(segment_entries(), st.integers(140, 2000))
def test_index_of_written_segment_round_trips(entries: list[tuple[int, int, bytes]], size: int) -> None:
    blocks = list(v2.encode_segment_blocks(iter(entries), streaming_block_size=size))
    infos = {
        block.ledger_id: v2.ledger_info_bytes(block.ledger_id, last_entry_id=block.last_entry_id, closed=False)
        for block in blocks
    }
    index = v2.index_for_blocks(
        [(b.ledger_id, b.row) for b in blocks], data_object_length=sum(len(b.data) for b in blocks), ledger_infos=infos
    )
    encoded = v2.encode_index(index)
    assert v2.decode_index(encoded) == index
    for ledger_id, entry_id, _ in entries:
        row = index.section(ledger_id).lookup(entry_id)
        block = v2.decode_block(blocks[row.part_id - 1].data)
        assert any(e == entry_id for e, _ in block.entries)


@given(v2_indexes())
def test_index_round_trip_and_canonical_form(index: v2.SegmentIndex) -> None:
    encoded = v2.encode_index(index)
    assert v2.decode_index(encoded) == index
    assert v2.encode_index(v2.decode_index(encoded)) == encoded


@given(st.lists(st.integers(0, 2**63 - 1), unique=True, max_size=40))
def test_java_hash_map_order_is_a_permutation_grouped_by_bucket(ledgers: list[int]) -> None:
    order = v2.java_hash_map_order(ledgers)
    assert sorted(order) == sorted(ledgers)
    # Sequential small ids in a table of 16 iterate in ascending bucket order.
    assert v2.java_hash_map_order([15, 16]) == [16, 15]
    assert v2.java_hash_map_order(list(range(5))) == list(range(5))


def _runs(entries: list[tuple[int, int, bytes]], data: st.DataObject) -> list[tuple[int, int, list[bytes]]]:
    """``entries`` cut into runs of one ledger's consecutive entries, of random lengths."""
    runs: list[tuple[int, int, list[bytes]]] = []
    at = 0
    while at < len(entries):
        ledger_id, entry_id, _ = entries[at]
        end = at + 1
        while end < len(entries) and entries[end][0] == ledger_id:
            end += 1
        end = data.draw(st.integers(at + 1, end))
        runs.append((ledger_id, entry_id, [payload for _, _, payload in entries[at:end]]))
        at = end
    return runs


def _blocks_by_the_rule(entries: list[tuple[int, int, bytes]], size: int) -> list[tuple[int, int, bytes]]:
    """``(ledger id, first entry id, block bytes)`` of each block, framed
    entry by entry straight from the format's rule (independent of
    ``BlockGrouper``): one ledger per block; a block's last entry is the
    one whose payload reaches ``size``; padded to ``size``."""
    blocks: list[tuple[int, int, bytes]] = []
    current: list[tuple[int, int, bytes]] = []

    def close() -> None:
        body = b"".join(struct.pack(">iq", len(p), e) + p for _, e, p in current)
        length = max(size, 128 + len(body))
        header = struct.pack(">Iqqqq", 0x26A66D32, 128, length, current[0][1], current[0][0])
        fill = padding(length - 128 - len(body))
        blocks.append((current[0][0], current[0][1], header.ljust(128, b"\0") + body + fill))
        current.clear()

    for entry in entries:
        if current and current[0][0] != entry[0]:
            close()
        current.append(entry)
        if sum(len(p) for _, _, p in current) >= size:
            close()
    if current:
        close()
    return blocks


@given(segment_entries(), st.integers(140, 2000), st.data())
def test_runs_are_framed_as_the_rule_and_one_by_one_frame_their_entries(
    entries: list[tuple[int, int, bytes]], size: int, data: st.DataObject
) -> None:
    grouper = v2.BlockGrouper(size)
    blocks: list[v2.EncodedSegmentBlock] = []
    for ledger_id, first, payloads in _runs(entries, data):
        taken, finished = grouper.add_run(ledger_id, first, payloads)
        assert taken == len(payloads)
        blocks.extend(finished)
    last = grouper.finish()
    blocks.extend([last] if last is not None else [])
    assert [(b.ledger_id, b.row.first_entry_id, bytes(b.data)) for b in blocks] == _blocks_by_the_rule(entries, size)
    assert [list(b.entry_lengths) for b in blocks] == [
        [len(p) for lid, e, p in entries if lid == b.ledger_id and b.row.first_entry_id <= e <= b.last_entry_id]
        for b in blocks
    ]
    one_by_one = v2.encode_segment_blocks(iter(entries), streaming_block_size=size)
    assert [(b.data, b.row, b.last_entry_id) for b in blocks] == [(b.data, b.row, b.last_entry_id) for b in one_by_one]


@given(segment_entries(), st.integers(140, 2000), st.data())
def test_runs_take_entries_while_their_framing_fits_the_room(
    entries: list[tuple[int, int, bytes]], size: int, data: st.DataObject
) -> None:
    """``add_run`` with a room, a free first block and a segment limit takes
    exactly what a loop of ``add`` calls applying the same rules takes."""
    bulk, single = v2.BlockGrouper(size), v2.BlockGrouper(size)
    stop_at = data.draw(st.none() | st.integers(200, 20_000))
    for ledger_id, first, payloads in _runs(entries, data):
        room = data.draw(st.integers(0, 3000))
        free = data.draw(st.booleans())
        taken, finished = bulk.add_run(ledger_id, first, payloads, room=room, fill_open_block=free, stop_at=stop_at)
        expected_taken, expected_blocks = 0, []
        for payload in payloads:
            opens = single.open_block_bytes == 0 or ledger_id != single._ledger_id
            cost = 12 + len(payload) + (128 if opens else 0)
            if opens and single.open_block_bytes:  # another ledger's open block finishes, padded to its size
                cost += max(size - single.open_block_bytes, 0)
            if cost > room and not free:
                break
            room -= cost
            done = single.add(ledger_id, first + expected_taken, payload)
            expected_taken += 1
            expected_blocks.extend(done)
            free = free and not done
            if stop_at is not None and single.offset + single.open_block_bytes >= stop_at:
                break
        assert taken == expected_taken
        assert [b.data for b in finished] == [b.data for b in expected_blocks]
        assert bulk.open_block_bytes == single.open_block_bytes
        if taken < len(payloads):
            return  # the caller would offer the rest again later, from the same place


def test_offering_out_of_order_or_returning_to_a_ledger_is_refused() -> None:
    grouper = v2.BlockGrouper(1024)
    grouper.add(3, 5, b"a")
    for ledger_id, entry_id in ((3, 7), (3, 5), (-1, 0)):
        with contextlib.suppress(FormatError):
            grouper.add(ledger_id, entry_id, b"b")
            raise AssertionError(f"{ledger_id}:{entry_id} was accepted")
    grouper.add(4, 0, b"c")
    try:
        grouper.add(3, 6, b"d")
    except FormatError as exc:
        assert "one consecutive run" in str(exc)
    else:
        raise AssertionError("a ledger came back after another")


@given(st.binary(max_size=400))
@example(bytes.fromhex("26A66D3200000000000000807FFFFFFFFFFFFFFF0000000000000000") + bytes(100))
@example(bytes.fromhex("3D1FB0BC0000002800000000000000000000000000000080" + "00" * 8 + "7FFFFFFF7FFFFFFF"))
def test_arbitrary_bytes_raise_only_format_error(data: bytes) -> None:
    only_format_errors(v2.decode_block_header, data)
    only_format_errors(v2.decode_block, data)
    only_format_errors(v2.decode_index, data)


@given(v2_indexes(), st.data())
def test_truncated_indexes_raise_format_error(index: v2.SegmentIndex, data: st.DataObject) -> None:
    encoded = v2.encode_index(index)
    cut = data.draw(st.integers(0, len(encoded) - 1))
    try:
        v2.decode_index(encoded[:cut])
    except FormatError:
        return
    raise AssertionError("a truncated index decoded")


@given(segment_entries(max_ledgers=1), st.data())
def test_truncated_blocks_raise_format_error(entries: list[tuple[int, int, bytes]], data: st.DataObject) -> None:
    block = next(v2.encode_segment_blocks(iter(entries), streaming_block_size=200)).data
    cut = data.draw(st.integers(0, len(block) - 1))
    try:
        v2.decode_block(bytes(block[:cut]))
    except FormatError:
        return
    raise AssertionError("a truncated block decoded")


@given(segment_entries(max_ledgers=1), v2_indexes(), st.data())
def test_bit_flips_raise_only_format_error(
    entries: list[tuple[int, int, bytes]], index: v2.SegmentIndex, data: st.DataObject
) -> None:
    block = bytes(next(v2.encode_segment_blocks(iter(entries), streaming_block_size=200)).data)
    for encoded, decode in ((block, v2.decode_block), (v2.encode_index(index), v2.decode_index)):
        flipped = bytearray(encoded)
        for _ in range(data.draw(st.integers(1, 3))):
            bit = data.draw(st.integers(0, len(flipped) * 8 - 1))
            flipped[bit // 8] ^= 1 << (bit % 8)
        only_format_errors(decode, bytes(flipped))


def test_the_entry_whose_payload_reaches_the_block_size_exactly_ends_the_block() -> None:
    for payloads in ([b"a" * 70, b"b" * 70, b"c"], [b"a" * 140, b"", b"b"], [b"", b"a" * 139, b"b", b""],
                     [b"a" * 1100, b"b" * 1100, b"c" * 1100]):  # fmt: skip
        entries = [(7, entry_id, payload) for entry_id, payload in enumerate(payloads)]
        for split in range(1, len(payloads) + 1):
            grouper = v2.BlockGrouper(140)
            _, blocks = grouper.add_run(7, 0, payloads[:split])
            more = grouper.add_run(7, split, payloads[split:])[1] if split < len(payloads) else []
            last = grouper.finish()
            framed = [*blocks, *more, *([last] if last is not None else [])]
            assert [(b.ledger_id, b.row.first_entry_id, bytes(b.data)) for b in framed] == _blocks_by_the_rule(
                entries, 140
            )


def test_a_block_keeps_the_bytes_it_was_offered_when_the_caller_reuses_its_buffer() -> None:
    """Payloads offered as views of the caller's buffer are framed when
    offered (the buffer may be reused before the block finishes); ``bytes``
    payloads, which cannot change, are joined when it finishes."""
    buffer = bytearray(b"a" * 100)
    grouper = v2.BlockGrouper(4000)
    grouper.add_run(1, 0, [memoryview(buffer)[:50], memoryview(buffer)[50:]])
    grouper.add_run(1, 2, [b"b" * 10, b"c" * 10])
    buffer[:] = b"z" * 100
    grouper.add_run(1, 4, [b"d" * 1500, b"e" * 1500])  # big enough to be referenced until the block finishes
    block = grouper.finish()
    assert block is not None
    assert [payload for _, payload in v2.decode_block(bytes(block.data)).entries] == [
        b"a" * 50, b"a" * 50, b"b" * 10, b"c" * 10, b"d" * 1500, b"e" * 1500,
    ]  # fmt: skip


class OverTheLimit(bytes):
    """A payload claiming 2^31 bytes, one over what the format's int32 length holds."""

    def __len__(self) -> int:
        return 2**31


def test_an_entry_over_the_formats_limit_is_refused_after_the_entries_before_it_are_taken() -> None:
    grouper = v2.BlockGrouper(1 << 20)
    huge = OverTheLimit()
    assert grouper.add_run(1, 0, [b"a", b"b", huge, b"c"])[0] == 2
    with pytest.raises(FormatError, match="2\\^31-1"):
        grouper.add_run(1, 2, [huge, b"c"])
    assert grouper.add_run(1, 2, [b"c"])[0] == 1  # nothing of the refused run was taken
    finished = grouper.finish()
    assert finished is not None and [p for _, p in v2.decode_block(finished.data).entries] == [b"a", b"b", b"c"]


def test_a_block_finished_early_is_paid_for_with_its_padding() -> None:
    """A run of the next ledger finishes the open block, which is padded to
    the block size: the room must hold that padding too, or the buffer
    holds more than its bound once the block is queued."""
    grouper = v2.BlockGrouper(4096)
    assert grouper.add_run(1, 0, [b"x" * 100]) == (1, [])
    opened = grouper.open_block_bytes
    needed = v2.BLOCK_HEADER_LENGTH + v1.ENTRY_HEADER_LENGTH + 100
    assert grouper.add_run(2, 0, [b"y" * 100], room=needed) == (0, [])  # the padding does not fit
    taken, finished = grouper.add_run(2, 0, [b"y" * 100], room=needed + 4096 - opened)
    assert taken == 1 and [len(block.data) for block in finished] == [4096]
