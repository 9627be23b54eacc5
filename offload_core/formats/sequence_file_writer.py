"""Hadoop SequenceFile writing, byte for byte as ``SequenceFile.Writer``
(NONE), ``RecordCompressWriter`` (RECORD) and ``BlockCompressWriter``
(BLOCK) write it, with ``DefaultCodec`` (zlib at its default level, as
Hadoop's built-in deflater uses it). Pure: the encoder returns the bytes
to write and keeps no file. The layout is described in
:mod:`.sequence_file`.
"""

from __future__ import annotations

import struct
import zlib

from ..errors import FormatError
from .hadoop_writables import encode_vlong
from .sequence_file import SYNC_ESCAPE, Compression, Header, encode_header

__all__ = ["DEFAULT_BLOCK_SIZE", "SYNC_INTERVAL", "SequenceFileEncoder"]

DEFAULT_BLOCK_SIZE = 1_000_000
"""``io.seqfile.compress.blocksize``'s default."""

SYNC_INTERVAL = 100 * 1024
"""``SequenceFile.SYNC_INTERVAL``: NONE and RECORD files put a sync marker
before the first record that starts this many bytes after the last one."""

_INT32 = struct.Struct(">i")
_ESCAPE = _INT32.pack(SYNC_ESCAPE)


class SequenceFileEncoder:
    """Encodes one SequenceFile. Write :attr:`header_bytes` first, then
    what each :meth:`append` and finally :meth:`finish` return.

    :attr:`length` is Hadoop's ``Writer.getLength()``: the bytes handed
    out so far, so in a BLOCK file the start of the block being filled.
    ``block_size`` is ``io.seqfile.compress.blocksize``: a block is written
    once its keys and values reach it. Keys and values are serialized
    Writables (see :mod:`.hadoop_writables`). A ``block_size`` below 1
    raises :class:`FormatError`.
    """

    def __init__(self, header: Header, *, block_size: int = DEFAULT_BLOCK_SIZE) -> None:
        if block_size < 1:
            raise FormatError(f"io.seqfile.compress.blocksize must be at least 1, got {block_size}")
        self.header = header
        self.header_bytes = encode_header(header)
        self.block_size = block_size
        self.length = len(self.header_bytes)
        self._last_sync = 0
        self._key_lengths: list[bytes] = []
        self._keys: list[bytes] = []
        self._value_lengths: list[bytes] = []
        self._values: list[bytes] = []
        self._buffered = 0

    def append(self, key: bytes, value: bytes) -> bytes:
        """Add one record; returns the bytes now due (often none in BLOCK)."""
        if self.header.compression is Compression.BLOCK:
            self._key_lengths.append(encode_vlong(len(key)))
            self._keys.append(key)
            self._value_lengths.append(encode_vlong(len(value)))
            self._values.append(value)
            self._buffered += len(key) + len(value)
            return self._block() if self._buffered >= self.block_size else b""
        stored = zlib.compress(value) if self.header.compression is Compression.RECORD else value
        out = []
        if self.length >= self._last_sync + SYNC_INTERVAL:
            out.append(self._sync_marker())
        out += [_INT32.pack(len(key) + len(stored)), _INT32.pack(len(key)), key, stored]
        return self._emit(out)

    def finish(self) -> bytes:
        """The bytes that end the file (a BLOCK file's last block)."""
        return self._block()

    def _block(self) -> bytes:
        if not self._keys:
            return b""
        out = [self._sync_marker(), encode_vlong(len(self._keys))]
        for buffer in (self._key_lengths, self._keys, self._value_lengths, self._values):
            compressed = zlib.compress(b"".join(buffer))
            out += [encode_vlong(len(compressed)), compressed]
        self._key_lengths, self._keys, self._value_lengths, self._values = [], [], [], []
        self._buffered = 0
        return self._emit(out)

    def _sync_marker(self) -> bytes:
        self._last_sync = self.length + len(_ESCAPE) + len(self.header.sync)
        return _ESCAPE + self.header.sync

    def _emit(self, parts: list[bytes]) -> bytes:
        data = b"".join(parts)
        self.length += len(data)
        return data
