"""The four compression codecs of Kafka record batches, as Kafka's clients
frame them. Pure; every codec is a kept library (zlib, cramjam, lz4,
zstandard), only the xerial framing around snappy is ours.

Kafka's framings, which plain library defaults do not all match:

- gzip: an ordinary gzip member (Java's ``GZIPOutputStream``).
- snappy: snappy-java's *xerial* stream: a 16-byte header (magic
  ``82 53 4E 41 50 50 59 00``, i32 version 1, i32 compatible version 1),
  then chunks of ``i32 length`` + one raw snappy block each. Data without
  that header is one raw snappy block, as librdkafka-based producers
  write it: snappy-java's ``SnappyInputStream`` (so Kafka) reads both.
- lz4: a standard LZ4 frame with independent 64 KiB blocks and no content
  size (FLG ``0x60``, BD ``0x40``).
- zstd: frames without a content size, so they are decompressed as a
  stream, never with a one-shot call that needs the size up front.

Decompression is bounded (``limit`` bytes) so that a hostile batch cannot
expand into the whole memory of the reader: past it, :class:`FormatError`.
"""

from __future__ import annotations

import io
import struct
import zlib
from enum import IntEnum

import cramjam
import lz4.frame
import zstandard

from ..errors import FormatError

__all__ = ["DEFAULT_DECOMPRESSED_LIMIT", "Compression", "compress", "decompress"]

#: Largest decompressed record section accepted by default: far above
#: Kafka's default ``max.message.bytes`` (1 MiB) and its 100 MiB socket cap.
DEFAULT_DECOMPRESSED_LIMIT = 256 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_I32 = struct.Struct(">i")


class Compression(IntEnum):
    """The codec id in bits 0-2 of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def compress(codec: Compression, data: bytes, *, level: int | None = None) -> bytes:
    """``data`` compressed and framed as Kafka's producer frames it."""
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        packer = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return packer.compress(data) + packer.flush()
    if codec == Compression.SNAPPY:
        out = bytearray(XERIAL_HEADER)
        for start in range(0, len(data), _XERIAL_BLOCK):
            chunk = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK]))
            out += _I32.pack(len(chunk)) + chunk
        return bytes(out)
    if codec == Compression.LZ4:
        return bytes(
            lz4.frame.compress(
                data,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
                compression_level=0 if level is None else level,
            )  # fmt: skip
        )
    if codec == Compression.ZSTD:
        return zstandard.ZstdCompressor(level=3 if level is None else level, write_content_size=False).compress(data)
    raise FormatError(f"compression codec id {int(codec)} is not one Kafka defines (0-4)")


def decompress(codec: int, data: bytes | memoryview, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT) -> bytes:
    """The record bytes inside a compressed batch. Raises :class:`FormatError`
    for an unknown codec id, damaged compressed bytes, or output past ``limit``."""
    try:
        if codec == Compression.NONE:
            return bytes(data)
        if codec == Compression.GZIP:
            return _gunzip(data, limit)
        if codec == Compression.SNAPPY:
            return _unsnappy(bytes(data), limit)
        if codec == Compression.LZ4:
            return _unlz4(bytes(data), limit)
        if codec == Compression.ZSTD:
            return _unzstd(bytes(data), limit)
    except FormatError:
        raise
    except (zlib.error, RuntimeError, ValueError, zstandard.ZstdError, cramjam.DecompressionError) as exc:
        raise FormatError(f"{Compression(codec).name.lower()} record data is damaged: {exc}") from None
    raise FormatError(f"compression codec id {codec} is not one Kafka defines (0-4): the batch attributes are damaged")


def _too_big(limit: int) -> FormatError:
    return FormatError(f"compressed records expand past {limit} bytes: the batch is damaged or hostile")


def _gunzip(data: bytes | memoryview, limit: int) -> bytes:
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out = unpacker.decompress(data, limit + 1)
    if len(out) > limit:
        raise _too_big(limit)
    if not unpacker.eof:
        raise FormatError("gzip record data is truncated")
    return out


def _unsnappy(data: bytes, limit: int) -> bytes:
    # SnappyInputStream's rule: a stream shorter than the xerial header, or
    # not starting with its magic, is one raw snappy block.
    if len(data) < len(XERIAL_HEADER) or not data.startswith(XERIAL_MAGIC):
        return _snappy_block(data, limit)
    out = bytearray()
    position = len(XERIAL_HEADER)
    while position < len(data):
        if position + 4 > len(data):
            raise FormatError("snappy record data is truncated inside a chunk length")
        (length,) = _I32.unpack_from(data, position)
        position += 4
        if length < 0 or position + length > len(data):
            raise FormatError(f"snappy chunk of {length} bytes runs past the record data")
        out += _snappy_block(data[position : position + length], limit, len(out))
        position += length
    return bytes(out)


def _snappy_block(block: bytes, limit: int, done: int = 0) -> bytes:
    if not block:
        return b""  # snappy-java reads empty input as empty
    # A raw block states its decoded length up front: check it before decoding.
    if done + cramjam.snappy.decompress_raw_len(block) > limit:
        raise _too_big(limit)
    return bytes(cramjam.snappy.decompress_raw(block))


def _unlz4(data: bytes, limit: int) -> bytes:
    unpacker = lz4.frame.LZ4FrameDecompressor()
    out = unpacker.decompress(data, max_length=limit + 1)
    if len(out) > limit:
        raise _too_big(limit)
    if not unpacker.eof:
        raise FormatError("lz4 record data is truncated")
    return bytes(out)


def _unzstd(data: bytes, limit: int) -> bytes:
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
    out = reader.read(limit + 1)
    if len(out) > limit:
        raise _too_big(limit)
    if not out and data:
        # A stream reader returns nothing for a truncated frame; say so.
        zstandard.ZstdDecompressor().decompressobj().decompress(data)
        raise FormatError("zstd record data is truncated")
    return bytes(out)
