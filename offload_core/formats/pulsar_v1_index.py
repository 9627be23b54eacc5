"""The index object of Pulsar's PIP-17 (v1) format: ``int32 magic
0xDE47DE47 | int32 index length | int64 data object length | int64 data
header length (128) | int32 block count | int32 metadata length |
BookKeeper LedgerMetadataFormat | block count x (int64 first entry id,
int32 part id from 1, int64 block offset)``, then (ours, outside the index
length the header states) optional sections Pulsar's reader skips. Pure;
re-exported by :mod:`offload_core.formats.pulsar_v1`."""

from __future__ import annotations

import bisect
import functools
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf.message import DecodeError

from ..errors import FormatError, InvalidRangeError
from ..proto import LedgerMetadataFormat
from .magics import wrong_magic
from .v1_layout import BLOCK_HEADER_LENGTH, ENTRY_HEADER_LENGTH, INDEX_MAGIC

__all__ = [
    "MAX_METADATA_LENGTH",
    "Index",
    "IndexEntry",
    "check_block_spans",
    "check_index_size",
    "closed_ledger_metadata",
    "decode_index",
    "encode_index",
    "parse_ledger_metadata",
]

_INDEX_HEADER = struct.Struct(">Iiqqii")
_INDEX_ENTRY = struct.Struct(">qiq")


@dataclass(frozen=True)
class IndexEntry:
    """Where a block starts: its first entry, multipart part id, byte offset."""

    first_entry_id: int
    part_id: int
    offset: int

    @property
    def data_offset(self) -> int:
        """Offset of the block's first entry (after the block header)."""
        return self.offset + BLOCK_HEADER_LENGTH


@dataclass(frozen=True)
class Index:
    """A decoded index object. ``ledger_metadata`` keeps the serialized
    BookKeeper metadata exactly as stored."""

    data_object_length: int
    ledger_metadata: bytes
    entries: tuple[IndexEntry, ...]
    data_header_length: int = BLOCK_HEADER_LENGTH
    trailer: bytes = b""
    """Bytes after the block table, outside the index length the header
    states: Pulsar's v1 reader reads exactly the block count's rows and
    ignores them, so optional sections (our entry offsets) go here."""

    def metadata(self) -> LedgerMetadataFormat:
        """The ledger metadata, parsed (a fresh copy each call). Raises
        :class:`FormatError` if corrupt."""
        return parse_ledger_metadata(self.ledger_metadata)

    @functools.cached_property
    def last_entry_id(self) -> int:
        return int(self.metadata().lastEntryId)

    @functools.cached_property
    def _first_entry_ids(self) -> tuple[int, ...]:
        return tuple(entry.first_entry_id for entry in self.entries)

    def lookup(self, entry_id: int) -> IndexEntry:
        """The block holding ``entry_id`` (the last block starting at or
        before it: Pulsar's floor lookup). Raises :class:`InvalidRangeError`
        for a negative id or one beyond the ledger's last entry."""
        last = self.last_entry_id
        if entry_id < 0 or entry_id > last:
            raise InvalidRangeError(f"Entry index: {entry_id} beyond lastEntryId: {last}")
        position = bisect.bisect_right(self._first_entry_ids, entry_id)
        if position == 0:
            raise InvalidRangeError(f"entry {entry_id} is before the first block of the index")
        return self.entries[position - 1]

    def block_end(self, block: IndexEntry) -> int:
        """Offset just past ``block`` (the next block's offset, or the end)."""
        position = block.part_id  # part ids are 1-based and consecutive
        return self.entries[position].offset if position < len(self.entries) else self.data_object_length

    def block_entries(self, block: IndexEntry) -> tuple[int, int]:
        """The ids of the first and last entry ``block`` should hold (the
        last is the first minus one for a block that should hold none)."""
        position = block.part_id
        following = self.entries[position].first_entry_id if position < len(self.entries) else self.last_entry_id + 1
        return block.first_entry_id, following - 1


def encode_index(index: Index) -> bytes:
    """Serialize ``index``. Raises :class:`FormatError` for an index that
    breaks the format's invariants (see :func:`decode_index`)."""
    _check_index(index)
    total = _INDEX_HEADER.size + len(index.ledger_metadata) + _INDEX_ENTRY.size * len(index.entries)
    if total > 2**31 - 1:
        raise FormatError(f"index of {len(index.entries)} blocks is too large for the format")
    out = bytearray(
        _INDEX_HEADER.pack(
            INDEX_MAGIC,
            total,
            index.data_object_length,
            index.data_header_length,
            len(index.entries),
            len(index.ledger_metadata),
        )
    )
    out += index.ledger_metadata
    for entry in index.entries:
        out += _INDEX_ENTRY.pack(entry.first_entry_id, entry.part_id, entry.offset)
    out += index.trailer
    return bytes(out)


def decode_index(data: bytes | memoryview) -> Index:
    """Parse an index object. Raises :class:`FormatError` unless the bytes
    start with exactly one well-formed index; what follows the length its
    header states is kept, undecoded, as the index's ``trailer``."""
    view = memoryview(data)
    if not len(view):
        raise FormatError("index object is empty")
    if len(view) < _INDEX_HEADER.size:
        raise FormatError(f"index needs at least {_INDEX_HEADER.size} bytes, got {len(view)}")
    magic, total, data_length, header_length, count, metadata_length = _INDEX_HEADER.unpack_from(view)
    if magic != INDEX_MAGIC:
        raise FormatError(wrong_magic("index", magic, INDEX_MAGIC))
    if not _INDEX_HEADER.size <= total <= len(view):
        raise FormatError(f"index says it is {total} bytes, the object has {len(view)}")
    if count < 0 or metadata_length < 0:
        raise FormatError(f"index block count {count} / metadata length {metadata_length} is negative")
    if _INDEX_HEADER.size + metadata_length + count * _INDEX_ENTRY.size != total:
        raise FormatError(
            f"index of {total} bytes cannot hold {metadata_length} bytes of metadata and {count} block entries"
        )
    start = _INDEX_HEADER.size
    metadata = bytes(view[start : start + metadata_length])
    entries = tuple(
        IndexEntry(*_INDEX_ENTRY.unpack_from(view, start + metadata_length + n * _INDEX_ENTRY.size))
        for n in range(count)
    )
    index = Index(
        data_object_length=data_length,
        ledger_metadata=metadata,
        entries=entries,
        data_header_length=header_length,
        trailer=bytes(view[total:]),
    )
    _check_index(index)
    return index


MAX_METADATA_LENGTH = 2**20
"""Room allowed for the BookKeeper metadata when judging an index's size
(a ledger's metadata is a few hundred bytes, more with many segments)."""


def check_index_size(index_size: int, data_object_size: int, *, limit: int) -> None:
    """Refuse an index object by its size alone, before it is read: one
    that is empty, over ``limit`` bytes, or larger than any index of a
    data object of ``data_object_size`` bytes can be (every block takes at
    least a header, and each has one 20-byte row). Raises
    :class:`FormatError`."""
    if index_size == 0:
        raise FormatError("index object is empty")
    if index_size > limit:
        raise FormatError(
            f"index object is {index_size} bytes, over the limit of {limit} bytes for an index; raise the limit "
            "if the ledger really has that many blocks"
        )
    most_blocks = data_object_size // BLOCK_HEADER_LENGTH + 1
    most_entries = data_object_size // ENTRY_HEADER_LENGTH
    # The block table, then room for an entry-offsets section (16 bytes of
    # its own, 4 per block and 4 per entry) after it.
    plausible = _INDEX_HEADER.size + MAX_METADATA_LENGTH + _INDEX_ENTRY.size * most_blocks
    plausible += 16 + 4 * most_blocks + 4 * most_entries
    if index_size > plausible:
        raise FormatError(
            f"index object is {index_size} bytes, more than the index of a {data_object_size}-byte data object "
            f"can be ({plausible})"
        )


def check_block_spans(index: Index, limit: int) -> None:
    """Refuse an index with a block longer than ``limit`` bytes, so that
    no block's length field can make a reader allocate more. Raises
    :class:`FormatError` naming the block."""
    for block in index.entries:
        span = index.block_end(block) - block.offset
        if span > limit:
            raise FormatError(
                f"block {block.part_id} at offset {block.offset} is {span} bytes, over the limit of {limit} bytes "
                "for a block (twice the max block size, at least 128 MiB); raise the reader's max block size if "
                "the objects were written with larger blocks"
            )


def _check_index(index: Index) -> None:
    if index.data_header_length != BLOCK_HEADER_LENGTH:
        raise FormatError(f"index data header length is {index.data_header_length}, expected {BLOCK_HEADER_LENGTH}")
    if not index.entries:
        raise FormatError("index has no blocks")
    metadata = parse_ledger_metadata(index.ledger_metadata)
    previous: IndexEntry | None = None
    for number, entry in enumerate(index.entries, start=1):
        if entry.part_id != number:
            raise FormatError(f"index block {number} has part id {entry.part_id}; part ids run 1, 2, 3 ...")
        if previous is None:
            if entry.offset != 0 or entry.first_entry_id != 0:
                raise FormatError(f"first index block starts at offset {entry.offset}, entry {entry.first_entry_id}")
        elif entry.offset < previous.offset + BLOCK_HEADER_LENGTH or entry.first_entry_id < previous.first_entry_id:
            raise FormatError(
                f"index block {number} (offset {entry.offset}, entry {entry.first_entry_id}) does not follow "
                f"block {number - 1} (offset {previous.offset}, entry {previous.first_entry_id})"
            )
        previous = entry
    # A data object length that ends inside the last block is what Pulsar
    # writes when an entry is larger than a block (that block is padding
    # only): the index is kept, and readers serve the blocks before it. It
    # never ends before that block starts.
    if previous is not None and index.data_object_length < previous.offset:
        raise FormatError(
            f"index data object length {index.data_object_length} ends before its last block at {previous.offset}"
        )
    if metadata.lastEntryId < index.entries[-1].first_entry_id:
        raise FormatError(
            f"ledger metadata last entry {metadata.lastEntryId} is before the last block's first entry "
            f"{index.entries[-1].first_entry_id}"
        )


def parse_ledger_metadata(raw: bytes) -> LedgerMetadataFormat:
    """BookKeeper's ``LedgerMetadataFormat`` from its serialized bytes (as
    PIP-17 indexes and MapFile key -1 hold them). Raises
    :class:`FormatError` for bytes that are not one, lack a required field
    or give a negative length."""
    metadata = LedgerMetadataFormat()
    try:
        metadata.ParseFromString(raw)
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise FormatError(f"ledger metadata in the index is not a LedgerMetadataFormat: {exc}") from exc
    if not metadata.IsInitialized():
        raise FormatError(
            f"ledger metadata in the index lacks required fields: {', '.join(metadata.FindInitializationErrors())}"
        )
    if metadata.lastEntryId < -1 or metadata.length < 0:
        raise FormatError(f"ledger metadata has last entry {metadata.lastEntryId} and length {metadata.length}")
    return metadata


def closed_ledger_metadata(
    *,
    length: int,
    last_entry_id: int,
    ensemble: Iterable[str] = ("127.0.0.1:3181",),
    ctime_ms: int = 0,
    custom: Iterable[tuple[str, bytes]] = (),
) -> LedgerMetadataFormat:
    """BookKeeper metadata for a closed single-segment ledger (no password)."""
    members = list(ensemble)
    metadata = LedgerMetadataFormat(
        quorumSize=len(members),
        ensembleSize=len(members),
        ackQuorumSize=len(members),
        length=length,
        lastEntryId=last_entry_id,
        state=LedgerMetadataFormat.CLOSED,
        digestType=LedgerMetadataFormat.CRC32C,
        ctime=ctime_ms,
    )
    metadata.segment.add(ensembleMember=members, firstEntryId=0)
    for key, value in custom:
        metadata.customMetadata.add(key=key, value=value)
    return metadata
