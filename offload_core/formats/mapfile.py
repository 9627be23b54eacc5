"""Hadoop MapFiles of ``LongWritable`` keys, as Pulsar's file-system
offloader keeps ledgers: a ``data`` SequenceFile of (key, ``BytesWritable``)
records in key order and an ``index`` SequenceFile (always BLOCK) of
(key, ``LongWritable`` offset into ``data``). Pure.

The index rule is ``MapFile.Writer.append``'s: before appending the n-th
record (from 0), if ``n >= last indexed n + io.map.index.interval`` and
``data``'s length grew since the last index entry, index this key at that
length. So the first key is always indexed, and in a BLOCK file an index
offset is the start of a block. A reader seeks to the floor key's offset
and scans forward (``MapFile.Reader.seek``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ..errors import FormatError
from .hadoop_writables import (
    BYTES_WRITABLE,
    LONG_WRITABLE,
    ShortInput,
    decode_bytes_writable,
    decode_long_writable,
    encode_bytes_writable,
    encode_long_writable,
)
from .sequence_file import DEFAULT_CODEC, Compression, Header, Unit, decode_header, decode_unit
from .sequence_file_writer import DEFAULT_BLOCK_SIZE, SequenceFileEncoder

__all__ = [
    "DEFAULT_INDEX_INTERVAL",
    "MapFileEncoder",
    "MapFileIndex",
    "check_data_header",
    "data_header",
    "decode_data",
    "decode_index",
    "index_header",
    "unit_entries",
]

DEFAULT_INDEX_INTERVAL = 128
"""``io.map.index.interval``'s default."""


def data_header(compression: Compression, sync: bytes) -> Header:
    """The ``data`` header Pulsar's ``MapFile.Writer`` call writes."""
    codec = None if compression is Compression.NONE else DEFAULT_CODEC
    return Header(LONG_WRITABLE, BYTES_WRITABLE, compression, codec, sync)


def index_header(sync: bytes) -> Header:
    """The ``index`` header: BLOCK compression whatever ``data`` uses."""
    return Header(LONG_WRITABLE, LONG_WRITABLE, Compression.BLOCK, DEFAULT_CODEC, sync)


class MapFileEncoder:
    """Encodes a MapFile of ``LongWritable`` keys and ``BytesWritable``
    values. Write :attr:`data_header_bytes`, then what :meth:`append` returns,
    then :meth:`finish`'s data tail; the ``index`` file is what
    :meth:`finish` returns second. Keys must not decrease
    (:class:`FormatError`); ``index_interval`` below 1 is refused too."""

    def __init__(
        self,
        *,
        compression: Compression,
        data_sync: bytes,
        index_sync: bytes,
        block_size: int = DEFAULT_BLOCK_SIZE,
        index_interval: int = DEFAULT_INDEX_INTERVAL,
    ) -> None:
        if index_interval < 1:
            raise FormatError(f"io.map.index.interval must be at least 1, got {index_interval}")
        self._data = SequenceFileEncoder(data_header(compression, data_sync), block_size=block_size)
        self._index = SequenceFileEncoder(index_header(index_sync), block_size=block_size)
        self._index_parts = [self._index.header_bytes]
        self.data_header_bytes = self._data.header_bytes
        self.index_interval = index_interval
        self._count = 0
        self._last_indexed_count: int | None = None
        self._last_indexed_position = -1
        self._last_key: int | None = None

    def append(self, key: int, payload: bytes | memoryview) -> bytes:
        """Add ``payload`` under ``key``; returns the ``data`` bytes now due."""
        if self._last_key is not None and key < self._last_key:
            raise FormatError(f"MapFile keys must not decrease: {key} after {self._last_key}")
        self._last_key = key
        key_bytes = encode_long_writable(key)
        position = self._data.length
        due = self._last_indexed_count is None or self._count >= self._last_indexed_count + self.index_interval
        if due and position > self._last_indexed_position:
            self._index_parts.append(self._index.append(key_bytes, encode_long_writable(position)))
            self._last_indexed_position = position
            self._last_indexed_count = self._count
        self._count += 1
        return self._data.append(key_bytes, encode_bytes_writable(payload))

    def finish(self) -> tuple[bytes, bytes]:
        """The rest of ``data`` and the whole ``index`` file."""
        self._index_parts.append(self._index.finish())
        return self._data.finish(), b"".join(self._index_parts)


@dataclass(frozen=True)
class MapFileIndex:
    """A decoded ``index``: keys ascending, each with its ``data`` offset."""

    keys: tuple[int, ...]
    offsets: tuple[int, ...]

    def floor_offset(self, key: int) -> int | None:
        """Where to start scanning ``data`` for ``key``: the offset of the
        last indexed key at or before it (``None`` before the first)."""
        slot = bisect.bisect_right(self.keys, key) - 1
        return None if slot < 0 else self.offsets[slot]

    def check_offsets(self, data_header_length: int, data_length: int, name: str) -> None:
        """Every offset must fall inside ``data``'s records, else
        :class:`FormatError` naming ``name`` and the offset."""
        for key, offset in zip(self.keys, self.offsets, strict=True):
            if not data_header_length <= offset < max(data_length, data_header_length + 1):
                raise FormatError(
                    f"{name}: index entry for key {key} points at byte {offset}, outside the data file's records "
                    f"(bytes {data_header_length} to {data_length})"
                )


def decode_index(buffer: bytes | memoryview, name: str) -> MapFileIndex:
    """The whole ``index`` file. Raises :class:`FormatError` naming
    ``name`` and the offset for a cut-short or damaged file, keys that
    decrease, or key and value classes other than ``LongWritable``."""
    try:
        header, position = decode_header(buffer)
    except FormatError as exc:
        raise FormatError(f"{name}: header: {exc}") from None
    if header.key_class != LONG_WRITABLE or header.value_class != LONG_WRITABLE:
        raise FormatError(f"{name}: index holds {header.key_class} -> {header.value_class}, not LongWritable pairs")
    keys: list[int] = []
    offsets: list[int] = []
    while position < len(buffer):
        try:
            unit = decode_unit(buffer, position, header)
            pairs = [(decode_long_writable(r.key), decode_long_writable(r.value)) for r in unit.records]
        except ShortInput:
            raise FormatError(f"{name}: cut short inside the unit at byte {position}") from None
        except FormatError as exc:
            raise FormatError(f"{name}: {exc}") from None
        for key, offset in pairs:
            if keys and key < keys[-1]:
                raise FormatError(f"{name}: index keys decrease at byte {position} ({key} after {keys[-1]})")
            keys.append(key)
            offsets.append(offset)
        position = unit.end
    return MapFileIndex(tuple(keys), tuple(offsets))


def check_data_header(header: Header, name: str) -> None:
    """A ``data`` header must hold ``LongWritable`` keys and
    ``BytesWritable`` values, else :class:`FormatError` naming ``name``."""
    if header.key_class != LONG_WRITABLE or header.value_class != BYTES_WRITABLE:
        raise FormatError(
            f"{name}: holds {header.key_class} -> {header.value_class}, not LongWritable -> BytesWritable; "
            "not a ledger written by a file-system offloader"
        )


def unit_entries(unit: Unit, name: str) -> list[tuple[int, bytes]]:
    """A ``data`` unit's records as (key, payload); a record that is not a
    ``LongWritable`` key with a ``BytesWritable`` value raises
    :class:`FormatError` naming ``name`` and the unit's offset."""
    try:
        return [(decode_long_writable(r.key), decode_bytes_writable(r.value)) for r in unit.records]
    except FormatError as exc:
        raise FormatError(f"{name}: record at byte {unit.offset}: {exc}") from None


def decode_data(buffer: bytes | memoryview, name: str) -> list[tuple[int, bytes]]:
    """Every (key, payload) of a whole ``data`` file, in file order.
    Raises :class:`FormatError` naming ``name`` and the offset for a
    cut-short or damaged file."""
    try:
        header, position = decode_header(buffer)
    except FormatError as exc:
        raise FormatError(f"{name}: header: {exc}") from None
    check_data_header(header, name)
    entries: list[tuple[int, bytes]] = []
    while position < len(buffer):
        try:
            unit = decode_unit(buffer, position, header)
        except ShortInput:
            raise FormatError(f"{name}: cut short inside the unit at byte {position}") from None
        except FormatError as exc:
            raise FormatError(f"{name}: {exc}") from None
        entries += unit_entries(unit, name)
        position = unit.end
    return entries
