"""PIP-17 v1 format: expected bytes written out by hand from the layout.

Nothing here is copied from our encoder's output: each expected value is
spelled from the format description (big-endian fields, 128-byte header,
FE DC DE AD padding)."""

from __future__ import annotations

import pytest

from offload_core.errors import FormatError, InvalidRangeError
from offload_core.formats import pulsar_v1 as v1
from offload_core.proto import LedgerMetadataFormat

ZERO_FILL = bytes(128 - 28)


def header_bytes(block_length_hex: str, first_entry_hex: str) -> bytes:
    return bytes.fromhex("FBDBABCB" + "0000000000000080" + block_length_hex + first_entry_hex) + ZERO_FILL


def test_block_header_bytes() -> None:
    expected = bytes.fromhex(
        "FBDBABCB"  # magic
        "0000000000000080"  # header length 128
        "0000000004000000"  # block length 64 MiB
        "0000000100000002"  # first entry id 2^32 + 2
    ) + bytes(100)
    header = v1.BlockHeader(block_length=64 * 2**20, first_entry_id=2**32 + 2)
    assert v1.encode_block_header(header) == expected
    assert v1.decode_block_header(expected) == header


def test_block_with_exact_fit_has_no_padding() -> None:
    # 128 header + (12 + 2) + (12 + 0) = 154 bytes: the last block of a ledger is sized exactly.
    expected = (
        header_bytes("000000000000009A", "0000000000000003")
        + bytes.fromhex("0000000200000000000000036162")
        + bytes.fromhex("000000000000000000000004")
    )
    assert v1.encode_block(3, 154, [b"ab", b""]) == expected
    block = v1.decode_block(expected)
    assert block.entries == ((3, b"ab"), (4, b""))
    assert block.padding_start == 154
    assert block.last_entry_id == 4


def test_padding_starts_its_pattern_at_its_first_byte_even_mid_word() -> None:
    # One 1-byte entry ends at offset 141 (not a multiple of 4); 6 padding
    # bytes follow, cut in the middle of the second pattern.
    expected = (
        header_bytes("0000000000000093", "0000000000000000")
        + bytes.fromhex("00000001000000000000000078")
        + bytes.fromhex("FEDCDEADFEDC")
    )
    assert v1.encode_block(0, 147, [b"x"]) == expected
    assert v1.decode_block(expected).padding_start == 141


def test_padding_shorter_than_a_length_field() -> None:
    expected = (
        header_bytes("0000000000000090", "0000000000000007")
        + bytes.fromhex("00000001000000000000000741")
        + bytes.fromhex("FEDCDE")
    )
    assert v1.encode_block(7, 144, [b"A"]) == expected
    assert v1.decode_block(expected).entries == ((7, b"A"),)


def test_block_holding_only_padding_is_readable() -> None:
    expected = header_bytes("0000000000000086", "0000000000000000") + bytes.fromhex("FEDCDEADFEDC")
    block = v1.decode_block(expected)
    assert block.entries == ()
    assert block.last_entry_id == -1


def test_wrong_padding_phase_is_rejected() -> None:
    shifted = header_bytes("0000000000000084", "0000000000000000") + bytes.fromhex("DCDEADFE")
    with pytest.raises(FormatError, match="padding from block offset 128"):
        v1.decode_block(shifted)


def test_block_size_rule() -> None:
    # min(max, remaining_entries * 12 + remaining_bytes + 128)
    assert v1.block_size(1024, remaining_entries=10, remaining_bytes=550) == 798
    assert v1.block_size(65536, remaining_entries=8, remaining_bytes=65400) == 65536
    assert v1.block_size(65536, remaining_entries=2, remaining_bytes=300) == 452


def test_entry_fits_only_whole() -> None:
    assert v1.entry_fits(used=128, entry_length=88, size=228)
    assert not v1.entry_fits(used=128, entry_length=89, size=228)


def test_entry_larger_than_a_block_is_an_error_not_an_empty_block() -> None:
    with pytest.raises(FormatError, match="entry 0 .* does not fit"):
        v1.encode_block(0, 200, [bytes(61)])


def test_keys_and_their_parser() -> None:
    uuid = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
    assert v1.data_key(uuid, 5_000_000_000) == f"{uuid}-ledger-5000000000"
    assert v1.index_key(uuid, 7) == f"{uuid}-ledger-7-index"
    assert v1.parse_key(f"{uuid}-ledger-5000000000") == v1.LedgerKey("", uuid, 5_000_000_000, False)
    assert v1.parse_key(f"some/prefix/{uuid}-ledger-7-index") == v1.LedgerKey("some/prefix/", uuid, 7, True)
    assert v1.parse_key(f"flat-{uuid}-ledger-7") == v1.LedgerKey("flat-", uuid, 7, False)
    for bad in [f"{uuid}-ledger-", f"{uuid}-ledger-07", f"{uuid}-ledger-7-idx", "x-ledger-7", f"{uuid}-ledger-{2**63}"]:
        assert v1.parse_key(bad) is None


METADATA = bytes.fromhex("0801100118a6042009280332110a0d31302e302e302e313a333138311000380148015080d095ffbc31")
# quorum 1, ensemble 1, length 550, last entry 9, CLOSED, one segment, CRC32, ack 1, ctime 1700000000000


def test_index_bytes() -> None:
    index = v1.Index(
        data_object_length=3000,
        ledger_metadata=METADATA,
        entries=(v1.IndexEntry(0, 1, 0), v1.IndexEntry(4, 2, 1024), v1.IndexEntry(8, 3, 2048)),
    )
    expected = (
        bytes.fromhex(
            "DE47DE47"  # magic
            "00000085"  # index length: 32 header + 41 metadata + 3 * 20 = 133 (0x85)
            "0000000000000BB8"  # data object length 3000
            "0000000000000080"  # data header length 128
            "00000003"  # block count
            "00000029"  # metadata length 41
        )
        + METADATA
        + bytes.fromhex("0000000000000000000000010000000000000000")
        + bytes.fromhex("0000000000000004000000020000000000000400")
        + bytes.fromhex("0000000000000008000000030000000000000800")
    )
    assert len(expected) == 0x85
    assert v1.encode_index(index) == expected
    assert v1.decode_index(expected) == index


def floor_index() -> v1.Index:
    metadata = v1.closed_ledger_metadata(length=100, last_entry_id=30).SerializeToString()
    entries = (v1.IndexEntry(0, 1, 0), v1.IndexEntry(10, 2, 500), v1.IndexEntry(25, 3, 1000))
    return v1.Index(data_object_length=1200, ledger_metadata=metadata, entries=entries)


@pytest.mark.parametrize(("entry", "part"), [(0, 1), (9, 1), (10, 2), (24, 2), (25, 3), (30, 3)])
def test_floor_lookup(entry: int, part: int) -> None:
    assert floor_index().lookup(entry).part_id == part


@pytest.mark.parametrize("entry", [31, 2**40, -1])
def test_lookup_out_of_range(entry: int) -> None:
    with pytest.raises(InvalidRangeError):
        floor_index().lookup(entry)


def test_lookup_beyond_last_entry_uses_pulsars_message() -> None:
    with pytest.raises(InvalidRangeError, match="Entry index: 31 beyond lastEntryId: 30"):
        floor_index().lookup(31)


def test_block_end() -> None:
    index = floor_index()
    assert [index.block_end(entry) for entry in index.entries] == [500, 1000, 1200]


def test_index_metadata_with_several_segments_and_custom_metadata_in_any_order() -> None:
    metadata = LedgerMetadataFormat(
        quorumSize=2, ensembleSize=3, length=10, lastEntryId=4, state=LedgerMetadataFormat.CLOSED
    )
    metadata.segment.add(ensembleMember=["a:1", "b:1", "c:1"], firstEntryId=0)
    metadata.segment.add(ensembleMember=["a:1", "d:1", "c:1"], firstEntryId=2)
    metadata.segment.add(ensembleMember=["e:1", "d:1", "c:1"], firstEntryId=3)
    for key in ["pulsar/managed-ledger", "component", "application"]:
        metadata.customMetadata.add(key=key, value=key.encode()[::-1])
    raw = metadata.SerializeToString()
    index = v1.Index(data_object_length=200, ledger_metadata=raw, entries=(v1.IndexEntry(0, 1, 0),))
    decoded = v1.decode_index(v1.encode_index(index))
    assert decoded.ledger_metadata == raw
    assert [s.firstEntryId for s in decoded.metadata().segment] == [0, 2, 3]
    assert [c.key for c in decoded.metadata().customMetadata] == ["pulsar/managed-ledger", "component", "application"]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b"\x00" + b[1:], "magic"),
        (lambda b: b[:4] + b"\x00\x00\x00\x01" + b[8:], "says it is 1 bytes"),
        (lambda b: b[:-1], "says it is"),
        (lambda b: b[:24] + b"\x7f\xff\xff\xff" + b[28:], "cannot hold"),
    ],
)
def test_index_rejects_inconsistent_lengths(mutate, message: str) -> None:  # type: ignore[no-untyped-def]
    good = v1.encode_index(floor_index())
    with pytest.raises(FormatError, match=message):
        v1.decode_index(mutate(good))


def test_index_part_ids_must_run_from_one() -> None:
    metadata = v1.closed_ledger_metadata(length=1, last_entry_id=0).SerializeToString()
    index = v1.Index(data_object_length=200, ledger_metadata=metadata, entries=(v1.IndexEntry(0, 2, 0),))
    with pytest.raises(FormatError, match="part id"):
        v1.encode_index(index)
