"""The index object of a PIP-76 streaming-offload segment (format v2). Pure.

``int32 magic 0x3D1FB0BC | int32 index length | int64 data object length |
int64 data header length (128)`` then, per ledger, ``int64 ledger id |
int32 row count | int32 metadata length | Pulsar LedgerInfo protobuf | row
count x (int64 first entry id, int32 part id, int64 block offset)``, offsets
counted across the whole data object and part ids running 1, 2, 3 ... in
offset order. :mod:`offload_core.formats.pulsar_v2` re-exports all of it.
"""

from __future__ import annotations

import bisect
import functools
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from ..errors import FormatError, InvalidRangeError
from ..proto import LedgerInfo
from .magics import V2_INDEX_MAGIC, wrong_magic
from .pulsar_v1 import BLOCK_HEADER_LENGTH, IndexEntry

__all__ = [
    "INDEX_MAGIC",
    "LedgerSection",
    "SegmentIndex",
    "SegmentRow",
    "decode_index",
    "encode_index",
    "index_for_blocks",
    "java_hash_map_order",
    "ledger_info_bytes",
]

INDEX_MAGIC = V2_INDEX_MAGIC

_INDEX_HEADER = struct.Struct(">Iiqq")
_LEDGER_HEADER = struct.Struct(">qii")
_ROW = struct.Struct(">qiq")
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class SegmentRow(IndexEntry):
    """A segment index row is a v1 index row (first entry id, part id, block
    offset) whose offset counts from the start of the whole segment, and
    whose block's first entry follows a header of the index's data header
    length (128 as Pulsar writes it; Pulsar's reader takes any)."""

    header_length: int = BLOCK_HEADER_LENGTH

    @property
    def data_offset(self) -> int:
        """Offset of the block's first entry (after the block header)."""
        return self.offset + self.header_length


@dataclass(frozen=True)
class LedgerSection:
    """One ledger's part of a segment index: its ``LedgerInfo`` bytes,
    exactly as stored, and its block rows in part order."""

    ledger_id: int
    ledger_info: bytes
    rows: tuple[SegmentRow, ...]

    def info(self) -> LedgerInfo:
        """The LedgerInfo, parsed (a fresh copy). Raises :class:`FormatError`."""
        return _parse_ledger_info(self.ledger_info)

    @functools.cached_property
    def _first_entry_ids(self) -> tuple[int, ...]:
        return tuple(row.first_entry_id for row in self.rows)

    @property
    def first_entry_id(self) -> int:
        """The first of this ledger's entries in the segment."""
        return self.rows[0].first_entry_id

    def lookup(self, entry_id: int) -> SegmentRow:
        """The block holding ``entry_id`` (floor search). Raises
        :class:`InvalidRangeError` for an id before the ledger's first
        entry in this segment."""
        position = bisect.bisect_right(self._first_entry_ids, entry_id)
        if position == 0:
            raise InvalidRangeError(
                f"entry {entry_id} of ledger {self.ledger_id} is before this segment's first ({self.first_entry_id})"
            )
        return self.rows[position - 1]


@dataclass(frozen=True)
class SegmentIndex:
    """A decoded segment index; ``ledgers`` in stored order."""

    data_object_length: int
    ledgers: tuple[LedgerSection, ...]
    data_header_length: int = BLOCK_HEADER_LENGTH

    @functools.cached_property
    def _by_ledger(self) -> dict[int, LedgerSection]:
        return {section.ledger_id: section for section in self.ledgers}

    @functools.cached_property
    def blocks(self) -> tuple[tuple[int, SegmentRow], ...]:
        """Every block as ``(ledger id, row)``, in data-object order."""
        rows = [(section.ledger_id, row) for section in self.ledgers for row in section.rows]
        return tuple(sorted(rows, key=lambda pair: pair[1].offset))

    @property
    def ledger_ids(self) -> tuple[int, ...]:
        """The ledgers the segment holds, in data-object order."""
        return tuple(dict.fromkeys(ledger_id for ledger_id, _ in self.blocks))

    def section(self, ledger_id: int) -> LedgerSection:
        """The ledger's section. Raises :class:`InvalidRangeError` if the
        segment holds none of its entries."""
        section = self._by_ledger.get(ledger_id)
        if section is None:
            held = ", ".join(map(str, self.ledger_ids))
            raise InvalidRangeError(f"segment holds no entry of ledger {ledger_id} (it holds ledgers {held})")
        return section

    def block_end(self, row: IndexEntry) -> int:
        """Offset just past the block of ``row``: the next block's offset, or
        the data object's end."""
        position = row.part_id  # part ids are 1-based and in offset order
        return self.blocks[position][1].offset if position < len(self.blocks) else self.data_object_length

    def next_block_of_ledger(self, ledger_id: int, row: IndexEntry) -> SegmentRow | None:
        """The ledger's block after ``row`` in this segment, if any."""
        rows = self.section(ledger_id).rows
        position = rows.index(row) + 1
        return rows[position] if position < len(rows) else None


def ledger_info_bytes(
    ledger_id: int, *, last_entry_id: int, closed: bool, entries: int = 0, size: int = 0, timestamp_ms: int = 0
) -> bytes:
    """The ``LedgerInfo`` Pulsar records per ledger in a segment index: a
    closed ledger's id, entry count, size and close timestamp; an open
    ledger's id, ``entries = last_entry_id + 1`` (its last entry in this
    segment) and timestamp 0."""
    if closed:
        info = LedgerInfo(ledgerId=ledger_id, entries=entries, size=size, timestamp=timestamp_ms)
    else:
        info = LedgerInfo(ledgerId=ledger_id, entries=last_entry_id + 1, timestamp=0)
    return bytes(info.SerializeToString())


def java_hash_map_order(ledger_ids: Sequence[int]) -> list[int]:
    """``ledger_ids`` (distinct, in insertion order) in the order a Java
    ``HashMap<Long, V>`` built by inserting them iterates: by bucket of
    ``Long.hashCode`` spread by ``h ^ (h >>> 16)``, insertion order within a
    bucket. (Bins that Java turns into trees, 8+ keys in one bucket of a
    table of 64+, are not modelled; sequential ledger ids never make them.)"""
    capacity = 16
    while len(ledger_ids) > capacity * 3 // 4:
        capacity *= 2

    def bucket(ledger_id: int) -> int:
        unsigned = ledger_id & 0xFFFFFFFFFFFFFFFF
        h = (unsigned ^ (unsigned >> 32)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)

    return [ledger_id for _, _, ledger_id in sorted((bucket(lid), n, lid) for n, lid in enumerate(ledger_ids))]


def index_for_blocks(
    rows: Iterable[tuple[int, SegmentRow]], *, data_object_length: int, ledger_infos: Mapping[int, bytes]
) -> SegmentIndex:
    """The index of a segment whose blocks are ``rows`` (``(ledger id,
    row)`` in data-object order), with each ledger's LedgerInfo bytes from
    ``ledger_infos``, ledgers in Java HashMap order as Pulsar writes them.
    Raises :class:`FormatError` if the result breaks the format (see
    :func:`decode_index`) or a ledger's info is missing."""
    by_ledger: dict[int, list[SegmentRow]] = {}
    for ledger_id, row in rows:
        by_ledger.setdefault(ledger_id, []).append(row)
    missing = set(by_ledger) - set(ledger_infos)
    if missing:
        raise FormatError(f"no LedgerInfo for ledger(s) {sorted(missing)} of the segment")
    index = SegmentIndex(
        data_object_length=data_object_length,
        ledgers=tuple(
            LedgerSection(ledger_id, ledger_infos[ledger_id], tuple(by_ledger[ledger_id]))
            for ledger_id in java_hash_map_order(list(by_ledger))
        ),
    )
    _check_index(index)
    return index


def encode_index(index: SegmentIndex) -> bytes:
    """Serialize ``index``. Raises :class:`FormatError` for an index that
    breaks the format's invariants (see :func:`decode_index`)."""
    _check_index(index)
    total = _INDEX_HEADER.size + sum(
        _LEDGER_HEADER.size + len(section.ledger_info) + _ROW.size * len(section.rows) for section in index.ledgers
    )
    if total > _INT32_MAX:
        raise FormatError(f"segment index of {len(index.blocks)} blocks is too large for the format")
    out = bytearray(_INDEX_HEADER.pack(INDEX_MAGIC, total, index.data_object_length, index.data_header_length))
    for section in index.ledgers:
        out += _LEDGER_HEADER.pack(section.ledger_id, len(section.rows), len(section.ledger_info))
        out += section.ledger_info
        for row in section.rows:
            out += _ROW.pack(row.first_entry_id, row.part_id, row.offset)
    return bytes(out)


def decode_index(data: bytes | memoryview) -> SegmentIndex:
    """Parse a segment index object. Raises :class:`FormatError` unless the
    bytes are exactly one well-formed index: a v1 index says so."""
    view = memoryview(data)
    if not len(view):
        raise FormatError("segment index object is empty")
    if len(view) < _INDEX_HEADER.size:
        raise FormatError(f"segment index needs at least {_INDEX_HEADER.size} bytes, got {len(view)}")
    magic, total, data_length, header_length = _INDEX_HEADER.unpack_from(view)
    if magic != INDEX_MAGIC:
        raise FormatError(wrong_magic("segment index", magic, INDEX_MAGIC))
    if total != len(view):
        raise FormatError(f"segment index says it is {total} bytes, the object has {len(view)}")
    position = _INDEX_HEADER.size
    sections: list[LedgerSection] = []
    while position < total:
        if total - position < _LEDGER_HEADER.size:
            raise FormatError(f"segment index offset {position}: ledger header is cut off")
        ledger_id, count, metadata_length = _LEDGER_HEADER.unpack_from(view, position)
        position += _LEDGER_HEADER.size
        if count < 0 or metadata_length < 0 or metadata_length + count * _ROW.size > total - position:
            raise FormatError(
                f"segment index offset {position}: ledger {ledger_id}'s {count} rows and {metadata_length} bytes of "
                "metadata do not fit the index"
            )
        info = bytes(view[position : position + metadata_length])
        position += metadata_length
        rows = tuple(_row(view, position + n * _ROW.size, header_length) for n in range(count))
        position += count * _ROW.size
        sections.append(LedgerSection(ledger_id, info, rows))
    index = SegmentIndex(data_object_length=data_length, ledgers=tuple(sections), data_header_length=header_length)
    _check_index(index)
    return index


def _row(view: memoryview, position: int, header_length: int) -> SegmentRow:
    first_entry_id, part_id, offset = _ROW.unpack_from(view, position)
    return SegmentRow(first_entry_id, part_id, offset, header_length)


def _check_index(index: SegmentIndex) -> None:
    header_length = index.data_header_length
    if not BLOCK_HEADER_LENGTH <= header_length <= _INT32_MAX:
        raise FormatError(f"index data header length is {header_length}, not in [{BLOCK_HEADER_LENGTH}, 2^31)")
    if not index.ledgers:
        raise FormatError("segment index lists no ledger")
    seen: set[int] = set()
    for section in index.ledgers:
        if section.ledger_id < 0 or section.ledger_id in seen:
            raise FormatError(f"segment index lists ledger {section.ledger_id} twice or with a negative id")
        seen.add(section.ledger_id)
        if not section.rows:
            raise FormatError(f"segment index lists ledger {section.ledger_id} with no block")
        info = _parse_ledger_info(section.ledger_info)
        if info.ledgerId != section.ledger_id:
            raise FormatError(
                f"segment index section of ledger {section.ledger_id} holds LedgerInfo of {info.ledgerId}"
            )
        for before, after in zip(section.rows, section.rows[1:], strict=False):
            if after.part_id != before.part_id + 1 or after.first_entry_id <= before.first_entry_id:
                raise FormatError(
                    f"ledger {section.ledger_id}'s blocks (part {before.part_id}, entry {before.first_entry_id}; "
                    f"part {after.part_id}, entry {after.first_entry_id}) are not consecutive blocks of rising entries"
                )
        if section.rows[0].first_entry_id < 0:
            raise FormatError(
                f"ledger {section.ledger_id}'s first block starts at entry {section.rows[0].first_entry_id}"
            )
        if info.HasField("entries") and info.entries <= section.rows[-1].first_entry_id:
            raise FormatError(
                f"ledger {section.ledger_id}'s LedgerInfo counts {info.entries} entries, but a block starts at entry "
                f"{section.rows[-1].first_entry_id}"
            )
    previous: SegmentRow | None = None
    for number, (_, row) in enumerate(index.blocks, start=1):
        if row.header_length != header_length:
            raise FormatError(f"segment block {number}'s header is {row.header_length} bytes, the index's "
                              f"{header_length}")  # fmt: skip
        if row.part_id != number:
            raise FormatError(f"segment block at offset {row.offset} has part id {row.part_id}, expected {number}")
        if previous is None:
            if row.offset != 0:
                raise FormatError(f"first segment block starts at offset {row.offset}, not 0")
        elif row.offset < previous.offset + header_length:
            raise FormatError(f"segment block {number} at offset {row.offset} overlaps block {number - 1}")
        previous = row
    if previous is not None and index.data_object_length < previous.offset + header_length:
        raise FormatError(
            f"index data object length {index.data_object_length} ends inside the last block at {previous.offset}"
        )


def _parse_ledger_info(raw: bytes) -> LedgerInfo:
    info = LedgerInfo()
    try:
        info.ParseFromString(raw)
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise FormatError(f"ledger metadata in the segment index is not a LedgerInfo: {exc}") from exc
    if not info.IsInitialized():
        raise FormatError("ledger metadata in the segment index lacks its ledgerId")
    if info.entries < 0 or info.size < 0 or info.timestamp < 0:
        raise FormatError(f"LedgerInfo of ledger {info.ledgerId} has negative counts")
    return info
