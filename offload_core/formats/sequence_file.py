"""Hadoop SequenceFile (version 6) reading: the header and the units after
it, as ``org.apache.hadoop.io.SequenceFile.Reader`` reads them. Pure.

Header: ``SEQ`` 0x06, key and value class names (``Text``), a compressed
and a block-compressed flag, the codec class name when compressed, int32
metadata pair count and the pairs, then the file's 16-byte sync marker
(random per file: always taken from the header). After it:

- NONE / RECORD: records ``int32 record length | int32 key length | key |
  value`` (RECORD: the value zlib-compressed by itself), and before a record
  now and then ``int32 -1 | sync``.
- BLOCK: blocks ``int32 -1 | sync | VInt record count`` then four
  ``VInt length | zlib`` buffers: key lengths (VInts), keys, value lengths
  (VInts), values.

Only ``DefaultCodec`` (zlib) is known. Writing is in
:mod:`.sequence_file_writer`.
"""

from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass

from ..errors import FormatError
from .hadoop_writables import ShortInput, decode_text, decode_vint, encode_text

__all__ = [
    "DEFAULT_CODEC",
    "MAX_UNIT_SIZE",
    "SYNC_ESCAPE",
    "SYNC_SIZE",
    "Compression",
    "Header",
    "Record",
    "Unit",
    "decode_header",
    "decode_unit",
    "encode_header",
]

MAGIC = b"SEQ"
VERSION = 6
SYNC_SIZE = 16
SYNC_ESCAPE = -1
DEFAULT_CODEC = "org.apache.hadoop.io.compress.DefaultCodec"
MAX_UNIT_SIZE = 1 << 30
"""The most bytes one record or decompressed block may hold when read:
a bound on what a damaged length can make a reader allocate."""

_INT32 = struct.Struct(">i")


class Compression(enum.Enum):
    """``SequenceFile.CompressionType``."""

    NONE = "NONE"
    RECORD = "RECORD"
    BLOCK = "BLOCK"


@dataclass(frozen=True)
class Header:
    """A SequenceFile header. ``codec`` is ``None`` when not compressed."""

    key_class: str
    value_class: str
    compression: Compression
    codec: str | None
    sync: bytes
    metadata: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Record:
    """One key/value pair as serialized Writables (values decompressed)."""

    key: bytes
    value: bytes


@dataclass(frozen=True)
class Unit:
    """What one read step yields: a block (BLOCK) or one record (else),
    starting at file offset ``offset`` (its sync marker included) and
    ending before ``end``."""

    offset: int
    end: int
    records: tuple[Record, ...]


def encode_header(header: Header) -> bytes:
    """The header bytes; a sync that is not 16 bytes, or a compressed
    header without a codec, raises :class:`FormatError`."""
    if len(header.sync) != SYNC_SIZE:
        raise FormatError(f"a SequenceFile sync marker is {SYNC_SIZE} bytes, not {len(header.sync)}")
    compressed = header.compression is not Compression.NONE
    parts = [MAGIC, bytes([VERSION]), encode_text(header.key_class), encode_text(header.value_class)]
    parts.append(bytes([compressed, header.compression is Compression.BLOCK]))
    if compressed:
        if header.codec is None:
            raise FormatError("a compressed SequenceFile names its codec")
        parts.append(encode_text(header.codec))
    parts.append(_INT32.pack(len(header.metadata)))
    for name, value in header.metadata:
        parts += [encode_text(name), encode_text(value)]
    parts.append(header.sync)
    return b"".join(parts)


def decode_header(buffer: bytes | memoryview) -> tuple[Header, int]:
    """The header at the start of ``buffer`` and its length. Raises
    :class:`ShortInput` if the buffer ends inside it, :class:`FormatError`
    for anything but a version-6 SequenceFile with a known codec."""
    if len(buffer) < 4:
        raise ShortInput(4 - len(buffer))
    if bytes(buffer[:3]) != MAGIC:
        raise FormatError(f"not a SequenceFile: starts {bytes(buffer[:3])!r}, not {MAGIC!r}")
    if buffer[3] != VERSION:
        raise FormatError(f"SequenceFile version {buffer[3]}; only version {VERSION} (Hadoop 0.20 on) is read")
    key_class, position = decode_text(buffer, 4)
    value_class, position = decode_text(buffer, position)
    if position + 2 > len(buffer):
        raise ShortInput(position + 2 - len(buffer))
    compressed, blocked = _flag(buffer, position), _flag(buffer, position + 1)
    position += 2
    if blocked and not compressed:
        raise FormatError("SequenceFile header says block-compressed but not compressed")
    codec: str | None = None
    if compressed:
        codec, position = decode_text(buffer, position)
        if codec != DEFAULT_CODEC:
            raise FormatError(f"SequenceFile codec {codec!r} is not supported; only {DEFAULT_CODEC} (zlib) is")
    count = _int32(buffer, position)
    position += 4
    if count < 0:
        raise FormatError(f"SequenceFile header has a negative metadata count {count}")
    pairs = []
    for _ in range(count):
        name, position = decode_text(buffer, position)
        value, position = decode_text(buffer, position)
        pairs.append((name, value))
    end = position + SYNC_SIZE
    if end > len(buffer):
        raise ShortInput(end - len(buffer))
    compression = Compression.BLOCK if blocked else Compression.RECORD if compressed else Compression.NONE
    header = Header(key_class, value_class, compression, codec, bytes(buffer[position:end]), tuple(pairs))
    return header, end


def decode_unit(buffer: bytes | memoryview, position: int, header: Header, *, base: int = 0) -> Unit:
    """The block (BLOCK) or record (else) at ``buffer[position:]``, which
    sits at file offset ``base + position``. Raises :class:`ShortInput`
    when the buffer ends inside it, :class:`FormatError` (naming the file
    offset) for a wrong sync marker, a bad length or a bad zlib buffer."""
    try:
        if header.compression is Compression.BLOCK:
            return _decode_block(buffer, position, header, base)
        return _decode_record(buffer, position, header, base)
    except ShortInput:
        raise
    except FormatError as exc:
        raise FormatError(f"at byte {base + position}: {exc}") from None


def _decode_block(buffer: bytes | memoryview, position: int, header: Header, base: int) -> Unit:
    start = position
    position = _sync(buffer, position, header)
    count, position = decode_vint(buffer, position)
    if count <= 0:
        raise FormatError(f"block of {count} records")
    buffers = []
    for _ in range(4):
        length, position = decode_vint(buffer, position)
        if length < 0:
            raise FormatError(f"compressed buffer of negative length {length}")
        if position + length > len(buffer):
            raise ShortInput(position + length - len(buffer))
        buffers.append(_inflate(buffer[position : position + length]))
        position += length
    key_lengths, keys, value_lengths, values = buffers
    key_parts = _split(keys, _lengths(key_lengths, count), "key")
    value_parts = _split(values, _lengths(value_lengths, count), "value")
    records = tuple(Record(k, v) for k, v in zip(key_parts, value_parts, strict=True))
    return Unit(base + start, base + position, records)


def _decode_record(buffer: bytes | memoryview, position: int, header: Header, base: int) -> Unit:
    start = position
    if _int32(buffer, position) == SYNC_ESCAPE:
        position = _sync(buffer, position, header)
    record_length = _int32(buffer, position)
    key_length = _int32(buffer, position + 4)
    if not 0 <= key_length <= record_length <= MAX_UNIT_SIZE:
        raise FormatError(f"record of {record_length} bytes with a key of {key_length} bytes")
    body = position + 8
    end = body + record_length
    if end > len(buffer):
        raise ShortInput(end - len(buffer))
    key = bytes(buffer[body : body + key_length])
    value = buffer[body + key_length : end]
    plain = _inflate(value) if header.compression is Compression.RECORD else bytes(value)
    return Unit(base + start, base + end, (Record(key, plain),))


def _sync(buffer: bytes | memoryview, position: int, header: Header) -> int:
    escape = _int32(buffer, position)
    if escape != SYNC_ESCAPE:
        raise FormatError(f"expected a sync marker (int32 -1), found {escape}")
    end = position + 4 + SYNC_SIZE
    if end > len(buffer):
        raise ShortInput(end - len(buffer))
    if bytes(buffer[position + 4 : end]) != header.sync:
        raise FormatError("sync marker differs from the header's (corrupt or spliced file)")
    return end


def _inflate(data: bytes | memoryview) -> bytes:
    inflater = zlib.decompressobj()
    try:
        plain = inflater.decompress(data, MAX_UNIT_SIZE)
    except zlib.error as exc:
        raise FormatError(f"bad zlib buffer ({exc})") from None
    if inflater.unconsumed_tail:
        raise FormatError(f"zlib buffer inflates past {MAX_UNIT_SIZE} bytes")
    if not inflater.eof or inflater.unused_data:
        raise FormatError("zlib buffer is cut short or has bytes after its end")
    return plain


def _lengths(data: bytes, count: int) -> list[int]:
    lengths = []
    position = 0
    try:
        for _ in range(count):
            length, position = decode_vint(data, position)
            if length < 0:
                raise FormatError(f"negative length {length} in a block")
            lengths.append(length)
    except ShortInput:
        raise FormatError(f"block lengths buffer holds fewer than {count} lengths") from None
    if position != len(data):
        raise FormatError(f"block lengths buffer has {len(data) - position} byte(s) after {count} lengths")
    return lengths


def _split(data: bytes, lengths: list[int], what: str) -> list[bytes]:
    if sum(lengths) != len(data):
        raise FormatError(f"block {what}s buffer is {len(data)} bytes, its lengths add up to {sum(lengths)}")
    parts = []
    position = 0
    for length in lengths:
        parts.append(data[position : position + length])
        position += length
    return parts


def _int32(buffer: bytes | memoryview, position: int) -> int:
    if position + 4 > len(buffer):
        raise ShortInput(position + 4 - len(buffer))
    value: int = _INT32.unpack_from(buffer, position)[0]
    return value


def _flag(buffer: bytes | memoryview, position: int) -> bool:
    if buffer[position] > 1:
        raise FormatError(f"SequenceFile header flag at byte {position} is {buffer[position]}, not 0 or 1")
    return bool(buffer[position])
