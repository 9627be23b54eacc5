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

Decompression streams: :func:`iter_decompressed` hands the records out in
pieces of at most 256 KiB (a raw snappy block whole), never the whole
section, and :class:`DecodedBytes` reads them front to back holding only
what is not yet consumed, so a batch that expands to gigabytes is read in
the memory of its compressed bytes and one record. The total is capped
(``limit`` bytes, the reader's ``max_decompressed_bytes``) so that a
hostile batch cannot expand forever: past it, :class:`FormatError`.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from enum import IntEnum

import cramjam
import lz4.block
import lz4.frame
import zstandard

from ..errors import FormatError

__all__ = ["DEFAULT_DECOMPRESSED_LIMIT", "Compression", "DecodedBytes", "compress", "decompress", "iter_decompressed"]

#: Largest decompressed record section accepted by default: far above
#: Kafka's default ``max.message.bytes`` (1 MiB) and its 100 MiB socket cap.
DEFAULT_DECOMPRESSED_LIMIT = 256 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size
_I32 = struct.Struct(">i")
_PIECE = 256 * 1024  # most decompressed bytes handed out at once
_INPUT_STEP = 64 * 1024  # compressed bytes fed at once, so no call copies the rest of the input
# zstd decodes whole blocks: 256 input bytes hold at most 64 RLE blocks of 128 KiB each.
_ZSTD_STEP = 256


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


def decompress(
    codec: int, data: bytes | memoryview, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT, magic: int = 2
) -> bytes:
    """The record bytes inside a compressed batch, whole. Raises
    :class:`FormatError` as :func:`iter_decompressed` does."""
    return b"".join(iter_decompressed(codec, data, limit=limit, magic=magic))


def iter_decompressed(
    codec: int, data: bytes | memoryview, *, limit: int = DEFAULT_DECOMPRESSED_LIMIT, magic: int = 2
) -> Iterator[bytes | memoryview]:
    """The record bytes inside a compressed batch (or, ``magic`` 0 or 1, a
    compressed wrapper message), in order, in pieces of at most 256 KiB (a
    raw snappy block or an old LZ4 block in one piece). Raises
    :class:`FormatError` for an unknown codec id, damaged or truncated
    compressed bytes, or output past ``limit`` bytes, when the piece
    concerned is reached."""
    if codec == Compression.NONE:
        yield data
        return
    # Kafka 0.8/0.9 clients wrote LZ4 frames with a wrong header checksum,
    # which Kafka ignores for magic 0 only (KafkaLZ4BlockInputStream).
    decoder = _unlz4_ignoring_header_checksum if codec == Compression.LZ4 and magic == 0 else _DECODERS.get(codec)
    if decoder is None:
        raise FormatError(
            f"compression codec id {codec} is not one Kafka defines (0-4): the batch attributes are damaged"
        )
    total = 0
    try:
        for piece in decoder(memoryview(data), limit):
            total += len(piece)
            if total > limit:
                raise _too_big(limit)
            yield piece
    except FormatError:
        raise
    except (zlib.error, RuntimeError, ValueError, zstandard.ZstdError, cramjam.DecompressionError,
            lz4.block.LZ4BlockError) as exc:  # fmt: skip
        raise FormatError(f"{Compression(codec).name.lower()} record data is damaged: {exc}") from None


def _too_big(limit: int) -> FormatError:
    return FormatError(
        f"compressed records expand past the decompression cap of {limit} bytes (max_decompressed_bytes of "
        "RemoteLogReader and RemoteStorageManager, max.decompressed.bytes of its configure(); "
        "--max-decompressed-bytes of `offload kafka copy`, `read` and `offsets`, maxDecompressedBytes of "
        "Spark's kafka-remote): the batch is damaged or "
        "hostile, or raise the cap"
    )


def _gunzip(data: memoryview, limit: int) -> Iterator[bytes]:
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    position = 0
    pending: bytes | memoryview = b""
    while not unpacker.eof:
        if not pending and position < len(data):
            pending = data[position : position + _INPUT_STEP]
            position += len(pending)
        out = unpacker.decompress(pending, _PIECE)
        pending = unpacker.unconsumed_tail
        if out:
            yield out
        elif not pending and position >= len(data) and not unpacker.eof:
            raise FormatError("gzip record data is truncated")


def _unsnappy(data: memoryview, limit: int) -> Iterator[bytes]:
    # SnappyInputStream's rule: a stream shorter than the xerial header, or
    # not starting with its magic, is one raw snappy block.
    if len(data) < len(XERIAL_HEADER) or data[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        yield _snappy_block(data, limit)
        return
    done = 0
    position = len(XERIAL_HEADER)
    while position < len(data):
        if position + 4 > len(data):
            raise FormatError("snappy record data is truncated inside a chunk length")
        (length,) = _I32.unpack_from(data, position)
        position += 4
        if length < 0 or position + length > len(data):
            raise FormatError(f"snappy chunk of {length} bytes runs past the record data")
        block = _snappy_block(data[position : position + length], limit, done)
        done += len(block)
        position += length
        yield block


def _snappy_block(block: memoryview, limit: int, done: int = 0) -> bytes:
    if not block:
        return b""  # snappy-java reads empty input as empty
    # A raw block states its decoded length up front: check it before decoding.
    if done + cramjam.snappy.decompress_raw_len(block) > limit:
        raise _too_big(limit)
    return bytes(cramjam.snappy.decompress_raw(block))


def _unlz4(data: memoryview, limit: int) -> Iterator[bytes]:
    unpacker = lz4.frame.LZ4FrameDecompressor()
    position = 0
    while not unpacker.eof:
        piece: bytes | memoryview = b""
        if unpacker.needs_input:
            if position >= len(data):
                raise FormatError("lz4 record data is truncated")
            piece = data[position : position + _INPUT_STEP]
            position += len(piece)
        out = unpacker.decompress(piece, max_length=_PIECE)
        if out:
            yield out


_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}
_LZ4_FLAG_VERSION = 0xC0
_LZ4_FLAG_BLOCK_CHECKSUM = 0x10
_LZ4_FLAG_CONTENT_SIZE = 0x08
_LZ4_FLAG_CONTENT_CHECKSUM = 0x04
_LZ4_UNCOMPRESSED = 0x80000000
_U32 = struct.Struct("<I")


def _unlz4_ignoring_header_checksum(data: memoryview, limit: int) -> Iterator[bytes]:
    # lz4.frame insists on the header checksum, so the frame is walked here
    # and each block decoded by lz4.block. Block checksums are skipped, not
    # checked: the message's CRC-32 covers them.
    if len(data) < 7 or _U32.unpack_from(data)[0] != _LZ4_MAGIC:
        raise FormatError("lz4 record data does not start with an LZ4 frame")
    flags, block_descriptor = data[4], data[5]
    block_max = _LZ4_BLOCK_SIZES.get((block_descriptor >> 4) & 0x07)
    if flags & _LZ4_FLAG_VERSION != 0x40 or block_max is None:
        raise FormatError(f"lz4 frame descriptor {flags:02x} {block_descriptor:02x} is not one Kafka reads")
    position = 7 + (8 if flags & _LZ4_FLAG_CONTENT_SIZE else 0)  # magic, FLG, BD, [size], header checksum
    trailer = 4 if flags & _LZ4_FLAG_BLOCK_CHECKSUM else 0
    while True:
        if position + 4 > len(data):
            raise FormatError("lz4 record data is truncated before its end mark")
        (size,) = _U32.unpack_from(data, position)
        position += 4
        if size == 0:
            return
        stored, size = size & _LZ4_UNCOMPRESSED, size & ~_LZ4_UNCOMPRESSED
        if size > block_max or position + size + trailer > len(data):
            raise FormatError(f"lz4 block of {size} bytes is larger than its frame allows or runs past it")
        block = data[position : position + size]
        yield bytes(block) if stored else lz4.block.decompress(block, uncompressed_size=block_max)
        position += size + trailer


def _unzstd(data: memoryview, limit: int) -> Iterator[bytes]:
    # Frames carry no content size and may follow one another: decode each
    # through its own decompressobj, fed a little at a time.
    position = 0
    while position < len(data):
        unpacker = zstandard.ZstdDecompressor().decompressobj(write_size=64 * 1024)
        while not unpacker.eof:
            if position >= len(data):
                raise FormatError("zstd record data is truncated")
            piece = data[position : position + _ZSTD_STEP]
            position += len(piece)
            out = unpacker.decompress(piece)
            if out:
                yield out
        position -= len(unpacker.unused_data)


_Decoder = Callable[[memoryview, int], Iterator[bytes]]
_DECODERS: dict[int, _Decoder] = {Compression.GZIP: _gunzip, Compression.SNAPPY: _unsnappy, Compression.LZ4: _unlz4,
                                  Compression.ZSTD: _unzstd}  # fmt: skip


class DecodedBytes:
    """Decompressed pieces read front to back: :meth:`take` and
    :meth:`varint` return what follows, holding only the bytes not yet
    consumed (and, while a record spans pieces, that record)."""

    def __init__(self, pieces: Iterable[bytes | memoryview]) -> None:
        self._pieces = iter(pieces)
        self._data: bytes | memoryview = b""
        self._at = 0

    def _fill(self, count: int) -> int:
        """Bytes available from the current position, at most ``count`` more pulled."""
        have = len(self._data) - self._at
        if have >= count:
            return have
        parts = [self._data[self._at :]]
        while have < count:
            piece = next(self._pieces, None)
            if piece is None:
                break
            parts.append(piece)
            have += len(piece)
        self._data = b"".join(parts)
        self._at = 0
        return have

    def take(self, count: int) -> bytes | None:
        """The next ``count`` bytes, or ``None`` if fewer are left."""
        if self._fill(count) < count:
            return None
        out = bytes(self._data[self._at : self._at + count])
        self._at += count
        return out

    def varint(self) -> tuple[int, int] | None:
        """The next zig-zag varint and its length in bytes, or ``None`` at the end.
        Raises :class:`FormatError` for one cut short or longer than 10 bytes."""
        available = self._fill(10)
        if available == 0:
            return None
        shift = raw = 0
        for length in range(1, min(available, 10) + 1):
            byte = self._data[self._at + length - 1]
            raw |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self._at += length
                return (raw >> 1) ^ -(raw & 1), length
            shift += 7
        raise FormatError("record varint is cut short or longer than 10 bytes")

    def at_end(self) -> bool:
        return self._fill(1) == 0
