"""The plugin's chunk indexes (``FixedSizeChunkIndex``,
``VariableSizeChunkIndex``, ``ChunkSizesBinaryCodec``). Pure.

A segment's ``.log`` is cut into chunks of ``originalChunkSize`` original
bytes (the last one shorter), each transformed on its own and stored back to
back. ``fixed`` (no compression): every stored chunk is
``transformedChunkSize`` bytes but the last, ``finalTransformedChunkSize``.
``variable`` (compression): the stored sizes, as base64 of one zstd frame
holding ``int32 count``, then for count >= 2 ``int32 base`` (minimum of all
sizes but the last), ``int8`` bytes per value, count - 1 unsigned
big-endian deltas from base and the last size as ``int32`` (count 1: only
that ``int32``; count 0: nothing more). All big-endian.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass
from itertools import accumulate

import zstandard

from ...errors import FormatError


@dataclass(frozen=True)
class Chunk:
    """One chunk: its original bytes ``[original_start, original_end)`` of the
    segment, stored at ``[stored_start, stored_end)`` of the object."""

    index: int
    original_start: int
    original_end: int
    stored_start: int
    stored_end: int


@dataclass(frozen=True)
class FixedChunkIndex:
    original_chunk_size: int
    original_file_size: int
    transformed_chunk_size: int
    final_transformed_chunk_size: int


@dataclass(frozen=True)
class VariableChunkIndex:
    original_chunk_size: int
    original_file_size: int
    transformed_chunk_sizes: tuple[int, ...]


ChunkIndex = FixedChunkIndex | VariableChunkIndex


def chunk_count(original_chunk_size: int, original_file_size: int) -> int:
    return -(-original_file_size // original_chunk_size)


def stored_sizes(index: ChunkIndex, key: str) -> tuple[int, ...]:
    """Each chunk's stored size. Raises :class:`FormatError` naming ``key``
    when the index does not add up (sizes not positive, or a count other
    than the original file size cut into chunks)."""
    if index.original_chunk_size < 1 or index.original_file_size < 0:
        raise FormatError(f"chunk index of {key!r}: chunk size {index.original_chunk_size} or file size "
                          f"{index.original_file_size} out of range; the object is not the plugin's")  # fmt: skip
    count = chunk_count(index.original_chunk_size, index.original_file_size)
    if isinstance(index, FixedChunkIndex):
        sizes = (index.transformed_chunk_size,) * (count - 1) + (index.final_transformed_chunk_size,) * min(count, 1)
    else:
        sizes = index.transformed_chunk_sizes
    if len(sizes) != count or any(size < 1 for size in sizes):
        raise FormatError(
            f"chunk index of {key!r} does not add up: {len(sizes)} stored chunk size(s) "
            f"{'with one not positive ' if any(s < 1 for s in sizes) else ''}for {index.original_file_size} "
            f"original bytes in chunks of {index.original_chunk_size} ({count} chunks)"
        )
    return sizes


def chunks(index: ChunkIndex, key: str) -> list[Chunk]:
    """Every chunk of the object ``key``, in order; see :func:`stored_sizes`
    for what is raised."""
    sizes = stored_sizes(index, key)
    ends = list(accumulate(sizes))
    size, total = index.original_chunk_size, index.original_file_size
    return [
        Chunk(i, i * size, min((i + 1) * size, total), end - stored, end)
        for i, (stored, end) in enumerate(zip(sizes, ends, strict=True))
    ]


def stored_size(index: ChunkIndex, key: str) -> int:
    """The size the object ``key`` must have."""
    return sum(stored_sizes(index, key))


def encode_chunk_sizes(sizes: tuple[int, ...]) -> str:
    """``transformedChunks`` for ``sizes`` (each 0 to 2**31 - 1), byte for
    byte as the plugin writes it."""
    if len(sizes) < 2:
        raw = struct.pack(f">i{len(sizes)}i", len(sizes), *sizes)
    else:
        base = min(sizes[:-1])
        width = max(max((size - base).bit_length() for size in sizes[:-1]) + 7 >> 3, 1)
        deltas = b"".join((size - base).to_bytes(width, "big") for size in sizes[:-1])
        raw = struct.pack(">iib", len(sizes), base, width) + deltas + struct.pack(">i", sizes[-1])
    frame = zstandard.ZstdCompressor(level=3, write_content_size=True, write_checksum=False).compress(raw)
    return base64.b64encode(frame).decode("ascii")


def decode_chunk_sizes(text: str, key: str) -> tuple[int, ...]:
    """The sizes in ``transformedChunks``; :class:`FormatError` naming
    ``key`` when they do not decode."""
    try:
        raw = zstandard.ZstdDecompressor().decompress(base64.b64decode(text, validate=True), max_output_size=1 << 31)
        (count,) = struct.unpack_from(">i", raw)
        if count < 0:
            raise ValueError(f"count {count}")
        if count < 2:
            sizes: tuple[int, ...] = struct.unpack(f">i{count}i", raw)[1:]
            return sizes
        base, width = struct.unpack_from(">ib", raw, 4)
        if not 1 <= width <= 4 or len(raw) != 9 + (count - 1) * width + 4:
            raise ValueError(f"{width} bytes per value for {count} sizes in {len(raw)} bytes")
        values = raw[9 : 9 + (count - 1) * width]
        deltas = [int.from_bytes(values[i : i + width], "big") for i in range(0, len(values), width)]
        return (*(base + delta for delta in deltas), *struct.unpack_from(">i", raw, len(raw) - 4))
    except (binascii.Error, zstandard.ZstdError, struct.error, ValueError) as error:
        raise FormatError(f"chunk index of {key!r}: transformedChunks does not decode ({error})") from None
