"""The ``.crc`` checksum files Hadoop's ``LocalFileSystem`` (a
``ChecksumFileSystem``) writes beside each file: ``.{name}.crc`` holding
``crc\\0``, int32 bytes per checksum (512), then the CRC-32 of every chunk
of that many bytes, the last chunk shorter. HDFS keeps checksums itself and
has no such files. Pure; the CRC is zlib's.

A ranged read checks only the chunks it touches: :func:`chunk_span` widens
the byte range to whole chunks and names the checksum words covering them,
:func:`check_chunks` checks those chunks against those words.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from ..errors import FormatError

__all__ = [
    "BYTES_PER_CHECKSUM",
    "CRC_HEADER_SIZE",
    "ChunkSpan",
    "CrcWriter",
    "check_chunks",
    "check_crc_file",
    "chunk_span",
    "crc_file_name",
    "parse_crc_header",
]

BYTES_PER_CHECKSUM = 512
_MAGIC = b"crc\0"
_HEADER = struct.Struct(">4si")
_WORD = struct.Struct(">I")
CRC_HEADER_SIZE = _HEADER.size


def crc_file_name(name: str) -> str:
    """``data`` -> ``.data.crc``, ``dir/data`` -> ``dir/.data.crc``:
    ``ChecksumFileSystem.getChecksumFile``."""
    parent, slash, base = name.rpartition("/")
    return f"{parent}{slash}.{base}.crc"


class CrcWriter:
    """Builds a ``.crc`` file from a file's bytes given in any pieces."""

    def __init__(self, bytes_per_checksum: int = BYTES_PER_CHECKSUM) -> None:
        if bytes_per_checksum < 1:
            raise FormatError(f"file.bytes-per-checksum must be at least 1, got {bytes_per_checksum}")
        self.bytes_per_checksum = bytes_per_checksum
        self._words = [_HEADER.pack(_MAGIC, bytes_per_checksum)]
        self._pending = b""

    def update(self, data: bytes | memoryview) -> None:
        """Add the file's next bytes."""
        pending = self._pending + bytes(data)
        whole = len(pending) - len(pending) % self.bytes_per_checksum
        for start in range(0, whole, self.bytes_per_checksum):
            self._words.append(_WORD.pack(zlib.crc32(pending[start : start + self.bytes_per_checksum])))
        self._pending = pending[whole:]

    def finish(self) -> bytes:
        """The ``.crc`` file's bytes."""
        if self._pending:
            self._words.append(_WORD.pack(zlib.crc32(self._pending)))
            self._pending = b""
        return b"".join(self._words)


def parse_crc_header(crc: bytes, name: str) -> int:
    """The bytes per checksum a ``.crc`` file's header (its first
    :data:`CRC_HEADER_SIZE` bytes) gives; raises :class:`FormatError`
    naming ``name``'s checksum file when it is not one."""
    if len(crc) < _HEADER.size:
        raise FormatError(f"{crc_file_name(name)} is {len(crc)} bytes, shorter than its header")
    magic, per_chunk = _HEADER.unpack_from(crc)
    if magic != _MAGIC or per_chunk < 1:
        raise FormatError(f"{crc_file_name(name)} is not a Hadoop checksum file")
    return int(per_chunk)


class ChunkSpan(NamedTuple):
    """Bytes ``[start, end)`` of a file, whole chunks, and where in its
    ``.crc`` file the words checking them are (``[crc_start, crc_end)``)."""

    start: int
    end: int
    crc_start: int
    crc_end: int


def chunk_span(start: int, end: int, size: int, per_chunk: int) -> ChunkSpan:
    """The whole chunks holding bytes ``[start, end)`` of a ``size``-byte
    file (the last chunk may be short) and their checksum words."""
    first = start // per_chunk
    stop = -(-min(end, size) // per_chunk)
    return ChunkSpan(first * per_chunk, min(stop * per_chunk, size), _HEADER.size + first * _WORD.size,
                     _HEADER.size + stop * _WORD.size)  # fmt: skip


def check_chunks(words: bytes, data: bytes, start: int, per_chunk: int, name: str) -> None:
    """Check ``data``, whole chunks from byte ``start`` (a chunk boundary)
    of file ``name``, against ``words``, their checksum words. Raises
    :class:`FormatError` naming ``name`` and the first bad chunk's offset,
    or saying the checksum file ends before the chunks do."""
    chunks = -(-len(data) // per_chunk)
    if len(words) < chunks * _WORD.size:
        raise FormatError(
            f"{crc_file_name(name)} ends before the checksum of the bytes of {name} from offset "
            f"{start + len(words) // _WORD.size * per_chunk}"
        )
    view = memoryview(data)
    # One pass of zlib over the chunks and one comparison: a loop of
    # per-chunk comparisons costs as much again in the interpreter.
    computed = struct.pack(
        f">{chunks}I", *[zlib.crc32(view[at : at + per_chunk]) for at in range(0, len(data), per_chunk)]
    )
    stored = words[: chunks * _WORD.size]
    if computed != stored:
        bad = next(n for n in range(0, len(computed), _WORD.size) if computed[n : n + 4] != stored[n : n + 4])
        raise FormatError(
            f"{name}: checksum mismatch in the bytes from offset {start + bad // _WORD.size * per_chunk} "
            f"({crc_file_name(name)})"
        )


def check_crc_file(crc: bytes, data: bytes, name: str) -> None:
    """Check ``data`` against its ``.crc`` file; raises
    :class:`FormatError` naming ``name`` and the first bad chunk's offset."""
    per_chunk = parse_crc_header(crc, name)
    chunks = -(-len(data) // per_chunk)
    if len(crc) != _HEADER.size + chunks * _WORD.size:
        raise FormatError(
            f"{crc_file_name(name)} holds {(len(crc) - _HEADER.size) // _WORD.size} checksums, "
            f"{name} ({len(data)} bytes) needs {chunks}"
        )
    check_chunks(crc[_HEADER.size :], data, 0, per_chunk, name)
