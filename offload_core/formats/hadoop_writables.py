"""Hadoop's primitive encodings, as ``org.apache.hadoop.io`` writes them:
``WritableUtils`` variable-length integers (VInt/VLong), ``Text`` strings,
``LongWritable`` and ``BytesWritable``. Pure; big-endian throughout.

Decoders take ``(buffer, position)`` and return ``(value, next position)``;
they raise :class:`ShortInput` when the buffer ends inside the value (the
caller may fetch more bytes) and :class:`~offload_core.errors.FormatError`
for bytes that can never decode.
"""

from __future__ import annotations

import struct

from ..errors import FormatError

__all__ = [
    "BYTES_WRITABLE",
    "LONG_WRITABLE",
    "ShortInput",
    "decode_bytes_writable",
    "decode_long_writable",
    "decode_text",
    "decode_vint",
    "decode_vlong",
    "encode_bytes_writable",
    "encode_long_writable",
    "encode_text",
    "encode_vlong",
]

LONG_WRITABLE = "org.apache.hadoop.io.LongWritable"
BYTES_WRITABLE = "org.apache.hadoop.io.BytesWritable"

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


class ShortInput(FormatError):
    """The buffer ends before the value does: ``needed`` more bytes (at
    least) would let decoding go on. Raised past the end of a whole file,
    it means the file is cut short."""

    def __init__(self, needed: int) -> None:
        super().__init__(f"input ends {needed} byte(s) early")
        self.needed = needed


def encode_vlong(value: int) -> bytes:
    """``WritableUtils.writeVLong``: -112..127 in one byte, else a length
    byte (sign folded in) and 1..8 big-endian magnitude bytes."""
    if not -(2**63) <= value < 2**63:
        raise FormatError(f"{value} does not fit a Hadoop VLong (a signed 64-bit integer)")
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    marker = -112
    if value < 0:
        value = ~value
        marker = -120
    size = (value.bit_length() + 7) // 8
    return struct.pack(">b", marker - size) + value.to_bytes(size, "big")


def decode_vlong(buffer: bytes | memoryview, position: int) -> tuple[int, int]:
    """``WritableUtils.readVLong``; raises :class:`ShortInput` when the
    buffer ends inside the number."""
    if position >= len(buffer):
        raise ShortInput(1)
    first = buffer[position] - 256 if buffer[position] > 127 else buffer[position]
    if first >= -112:
        return first, position + 1
    # WritableUtils.decodeVIntSize: the length counts the first byte too.
    end = position + (-119 - first if first < -120 else -111 - first)
    if end > len(buffer):
        raise ShortInput(end - len(buffer))
    magnitude = int.from_bytes(buffer[position + 1 : end], "big")
    negative = first < -120
    return (~magnitude if negative else magnitude), end


def decode_vint(buffer: bytes | memoryview, position: int) -> tuple[int, int]:
    """``WritableUtils.readVInt``: a VLong that must fit a signed int32."""
    value, end = decode_vlong(buffer, position)
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise FormatError(f"VInt at byte {position} is {value}, out of the int32 range")
    return value, end


def encode_text(text: str) -> bytes:
    """``Text.writeString``: VInt byte length, then UTF-8."""
    data = text.encode("utf-8")
    return encode_vlong(len(data)) + data


def decode_text(buffer: bytes | memoryview, position: int) -> tuple[str, int]:
    """``Text.readString``; a negative length or invalid UTF-8 raises
    :class:`FormatError`."""
    length, start = decode_vint(buffer, position)
    if length < 0:
        raise FormatError(f"string at byte {position} has a negative length {length}")
    end = start + length
    if end > len(buffer):
        raise ShortInput(end - len(buffer))
    try:
        return bytes(buffer[start:end]).decode("utf-8"), end
    except UnicodeDecodeError as exc:
        raise FormatError(f"string at byte {position} is not UTF-8 ({exc.reason})") from None


def encode_long_writable(value: int) -> bytes:
    """A ``LongWritable``: 8 bytes, signed."""
    try:
        return _INT64.pack(value)
    except struct.error:
        raise FormatError(f"{value} does not fit a LongWritable (a signed 64-bit integer)") from None


def decode_long_writable(data: bytes | memoryview) -> int:
    """A serialized ``LongWritable``; any length but 8 raises :class:`FormatError`."""
    if len(data) != _INT64.size:
        raise FormatError(f"a LongWritable is 8 bytes, this one is {len(data)}")
    value: int = _INT64.unpack(data)[0]
    return value


def encode_bytes_writable(payload: bytes | memoryview) -> bytes:
    """A ``BytesWritable``: int32 length, then the bytes."""
    return _INT32.pack(len(payload)) + bytes(payload)


def decode_bytes_writable(data: bytes | memoryview) -> bytes:
    """A serialized ``BytesWritable``; its length word must match the rest
    exactly, else :class:`FormatError`."""
    if len(data) < _INT32.size:
        raise FormatError(f"a BytesWritable needs a 4-byte length, this one is {len(data)} bytes")
    (length,) = _INT32.unpack_from(data)
    if length != len(data) - _INT32.size:
        raise FormatError(f"a BytesWritable says it holds {length} bytes but holds {len(data) - _INT32.size}")
    return bytes(data[_INT32.size :])
