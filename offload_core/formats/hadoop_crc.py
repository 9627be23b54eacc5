"""The ``.crc`` checksum files Hadoop's ``LocalFileSystem`` (a
``ChecksumFileSystem``) writes beside each file: ``.{name}.crc`` holding
``crc\\0``, int32 bytes per checksum (512), then the CRC-32 of every chunk
of that many bytes, the last chunk shorter. HDFS keeps checksums itself and
has no such files. Pure; the CRC is zlib's.
"""

from __future__ import annotations

import struct
import zlib

from ..errors import FormatError

__all__ = ["BYTES_PER_CHECKSUM", "CrcWriter", "check_crc_file", "crc_file_name"]

BYTES_PER_CHECKSUM = 512
_MAGIC = b"crc\0"
_HEADER = struct.Struct(">4si")
_WORD = struct.Struct(">I")


def crc_file_name(name: str) -> str:
    """``data`` -> ``.data.crc``: ``ChecksumFileSystem.getChecksumFile``."""
    return f".{name}.crc"


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


def check_crc_file(crc: bytes, data: bytes, name: str) -> None:
    """Check ``data`` against its ``.crc`` file; raises
    :class:`FormatError` naming ``name`` and the first bad chunk's offset."""
    if len(crc) < _HEADER.size:
        raise FormatError(f"{crc_file_name(name)} is {len(crc)} bytes, shorter than its header")
    magic, per_chunk = _HEADER.unpack_from(crc)
    if magic != _MAGIC or per_chunk < 1:
        raise FormatError(f"{crc_file_name(name)} is not a Hadoop checksum file")
    chunks = -(-len(data) // per_chunk)
    if len(crc) != _HEADER.size + chunks * _WORD.size:
        raise FormatError(
            f"{crc_file_name(name)} holds {(len(crc) - _HEADER.size) // _WORD.size} checksums, "
            f"{name} ({len(data)} bytes) needs {chunks}"
        )
    for chunk in range(chunks):
        start = chunk * per_chunk
        (expected,) = _WORD.unpack_from(crc, _HEADER.size + chunk * _WORD.size)
        if zlib.crc32(data[start : start + per_chunk]) != expected:
            raise FormatError(f"{name}: checksum mismatch in the bytes from offset {start} ({crc_file_name(name)})")
