"""SequenceFile / MapFile properties: round trips in every compression,
Hadoop's index rule, and only FormatError on damaged files."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_core.errors import FormatError
from offload_core.formats.hadoop_crc import CrcWriter, check_crc_file
from offload_core.formats.hadoop_writables import decode_vlong, encode_vlong
from offload_core.formats.mapfile import MapFileEncoder, decode_data, decode_index
from offload_core.formats.sequence_file import Compression, decode_header

SYNC_A = bytes(range(16))
SYNC_B = bytes(range(16, 32))


def _write(
    entries: list[bytes], compression: Compression, block_size: int = 1_000_000, interval: int = 128
) -> tuple[bytes, bytes]:
    encoder = MapFileEncoder(
        compression=compression, data_sync=SYNC_A, index_sync=SYNC_B, block_size=block_size, index_interval=interval
    )
    parts = [encoder.data_header_bytes, encoder.append(-1, b"meta")]
    parts += [encoder.append(n, entry) for n, entry in enumerate(entries)]
    tail, index = encoder.finish()
    return b"".join([*parts, tail]), index


@given(st.integers(-(2**63), 2**63 - 1))
def test_vlong_round_trip(value: int) -> None:
    encoded = encode_vlong(value)
    assert decode_vlong(encoded, 0) == (value, len(encoded))


def test_vlong_bytes_are_hadoops() -> None:
    # WritableUtils.writeVLong: one byte down to -112, then -113 - length.
    assert encode_vlong(127) == b"\x7f"
    assert encode_vlong(-112) == b"\x90"
    assert encode_vlong(128) == b"\x8f\x80"
    assert encode_vlong(-113) == b"\x87\x70"
    assert encode_vlong(1_000_000) == b"\x8d\x0f\x42\x40"


@settings(max_examples=40)
@given(
    st.lists(st.binary(max_size=2000), max_size=400),
    st.sampled_from(list(Compression)),
    st.integers(1, 5000),
    st.integers(1, 200),
)
def test_round_trip_and_index_rule(
    entries: list[bytes], compression: Compression, block_size: int, interval: int
) -> None:
    data, index_bytes = _write(entries, compression, block_size, interval)
    assert decode_data(data, "data") == [(-1, b"meta"), *enumerate(entries)]
    index = decode_index(index_bytes, "index")
    assert index.keys[0] == -1
    header_length = decode_header(data)[1]
    assert index.offsets[0] == header_length
    for key, offset in zip(index.keys, index.offsets, strict=True):
        # Scanning from an indexed offset starts at a unit and reaches the key.
        scanned = decode_data(data[:header_length] + data[offset:], "data")
        assert (key, b"meta" if key == -1 else entries[key]) in scanned
    gaps = [b - a for a, b in zip(index.keys, index.keys[1:], strict=False)]
    assert all(gap >= interval for gap in gaps)


@settings(max_examples=10)
@given(st.integers(0, 3000), st.sampled_from([Compression.BLOCK, Compression.RECORD]), st.integers(0, 2**32))
def test_thousands_of_entries(count: int, compression: Compression, seed: int) -> None:
    rng = random.Random(seed)
    entries = [rng.randbytes(rng.randrange(0, 64)) for _ in range(count)]
    data, index_bytes = _write(entries, compression, block_size=4096)
    assert decode_data(data, "data")[1:] == list(enumerate(entries))
    index = decode_index(index_bytes, "index")
    if compression is Compression.RECORD:
        # One record per unit: exactly every 128th key is indexed.
        assert index.keys == (-1, *range(127, count, 128))


@settings(max_examples=5, deadline=None)
@given(
    st.lists(st.integers(0, 3 * 2**20), min_size=1, max_size=3),
    st.sampled_from([Compression.BLOCK, Compression.RECORD]),
    st.integers(0, 2**32),
)
def test_entries_of_megabytes(sizes: list[int], compression: Compression, seed: int) -> None:
    rng = random.Random(seed)
    entries = [rng.randbytes(size) for size in sizes]
    data, _ = _write(entries, compression)
    assert decode_data(data, "data")[1:] == list(enumerate(entries))


@settings(max_examples=60)
@given(
    st.lists(st.binary(max_size=300), max_size=40),
    st.sampled_from(list(Compression)),
    st.data(),
)
def test_truncated_or_bit_flipped_files_raise_only_format_error(
    entries: list[bytes], compression: Compression, data_strategy: st.DataObject
) -> None:
    data, index = _write(entries, compression, block_size=700, interval=3)
    full_data, full_index = decode_data(data, "data"), decode_index(index, "index")
    for content, name in ((data, "data"), (index, "index")):
        # Cut at a unit boundary, a file is a shorter file of the same
        # records (the ledger reader knows how many to expect); cut
        # anywhere else, it is a FormatError naming the file.
        cut = data_strategy.draw(st.integers(0, len(content) - 1))
        try:
            if name == "data":
                shorter = decode_data(content[:cut], name)
                assert shorter == full_data[: len(shorter)]
            else:
                index_part = decode_index(content[:cut], name)
                assert index_part.keys == full_index.keys[: len(index_part.keys)]
        except FormatError as exc:
            assert str(exc).startswith(f"{name}: ")
        flip = data_strategy.draw(st.integers(0, len(content) * 8 - 1))
        damaged = bytearray(content)
        damaged[flip // 8] ^= 1 << (flip % 8)
        try:
            decode_data(bytes(damaged), "damaged") if name == "data" else decode_index(bytes(damaged), "damaged")
        except FormatError as exc:
            assert str(exc).startswith("damaged: ")


@pytest.mark.parametrize("compression", [Compression.BLOCK, Compression.RECORD])
def test_flipped_bits_in_compressed_files_never_give_wrong_payloads(compression: Compression) -> None:
    # Keys are stored plainly in RECORD files: the ledger reader catches a
    # changed key (ids must run -1, 0, 1, ...); zlib's Adler-32 catches the rest.
    entries = [bytes([n]) * (50 + n) for n in range(30)]
    data, _ = _write(entries, compression, block_size=800)
    header_length = decode_header(data)[1]
    for bit in range(header_length * 8, len(data) * 8, 7):
        damaged = bytearray(data)
        damaged[bit // 8] ^= 1 << (bit % 8)
        try:
            decoded = decode_data(bytes(damaged), "data")
        except FormatError:
            continue
        assert [value for _, value in decoded] == [b"meta", *entries], f"bit {bit}"


def test_crc_file_catches_a_flipped_bit() -> None:
    data, _ = _write([b"x" * 2000], Compression.NONE)
    crc = CrcWriter()
    crc.update(data)
    checksums = crc.finish()
    check_crc_file(checksums, data, "data")
    damaged = bytearray(data)
    damaged[1500] ^= 4
    with pytest.raises(FormatError, match="offset 1024"):
        check_crc_file(checksums, bytes(damaged), "data")
