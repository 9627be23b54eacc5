"""Pulsar's PIP-17 ledger-offload object format (version 1). Pure: no I/O.

A ledger becomes two objects:

* the **data object** ``{uuid}-ledger-{ledgerId}``: a sequence of blocks, one
  multipart part each. A block is a 128-byte header (``int32 magic
  0xFBDBABCB | int64 header length 128 | int64 block length | int64 first
  entry id | zeros``), then whole entries (``int32 length | int64 entry id |
  payload``), then padding: ``FE DC DE AD`` repeated, cut at the block
  length. Every block has the maximum size except the last, which is sized
  exactly (see :func:`block_size`).
* the **index object** ``{uuid}-ledger-{ledgerId}-index``: ``int32 magic
  0xDE47DE47 | int32 index length | int64 data object length | int64 data
  header length (128) | int32 block count | int32 metadata length |
  BookKeeper LedgerMetadataFormat | block count x (int64 first entry id,
  int32 part id from 1, int64 block offset)``; its codec is in
  :mod:`offload_core.formats.pulsar_v1_index`, re-exported here.

Both carry the user metadata ``s3managedledgeroffloaderformatversion=1``.
All integers are big-endian. Decoders are strict (they accept exactly what
the encoders produce, so ``encode(decode(b)) == b``) and raise only
:class:`FormatError`; every length read from untrusted bytes is checked
against what is really there before anything is allocated.
"""

from __future__ import annotations

import itertools
import struct
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ..errors import FormatError
from .magics import wrong_magic
from .pulsar_v1_index import (
    MAX_METADATA_LENGTH,
    Index,
    IndexEntry,
    check_block_spans,
    check_index_size,
    closed_ledger_metadata,
    decode_index,
    encode_index,
)
from .pulsar_v1_keys import LedgerKey, data_key, index_key, parse_key
from .v1_layout import (
    BLOCK_HEADER_LENGTH,
    BLOCK_MAGIC,
    ENTRY_HEADER_LENGTH,
    FORMAT_VERSION,
    FORMAT_VERSION_KEY,
    INDEX_MAGIC,
    PADDING,
)

__all__ = [
    "BLOCK_HEADER_LENGTH",
    "BLOCK_MAGIC",
    "ENTRY_HEADER_LENGTH",
    "FORMAT_VERSION",
    "FORMAT_VERSION_KEY",
    "INDEX_MAGIC",
    "PADDING",
    "Block",
    "BlockHeader",
    "EncodedBlock",
    "Index",
    "IndexEntry",
    "LedgerKey",
    "MAX_METADATA_LENGTH",
    "block_size",
    "check_block_spans",
    "check_index_size",
    "closed_ledger_metadata",
    "data_key",
    "decode_block",
    "decode_block_body",
    "decode_block_header",
    "decode_index",
    "encode_block",
    "encode_block_header",
    "block_entry_positions",
    "encode_data_blocks",
    "encode_index",
    "entry_fits",
    "format_version_problem",
    "read_entry_header",
    "index_key",
    "padding",
    "parse_key",
]


_BLOCK_HEADER = struct.Struct(">Iqqq")
_ENTRY_HEADER = struct.Struct(">iq")
_LENGTH = struct.Struct(">i")
_INT64_MAX = 2**63 - 1


# -- data blocks ----------------------------------------------------------


@dataclass(frozen=True)
class BlockHeader:
    """The 128-byte header at the start of every data block."""

    block_length: int
    first_entry_id: int


def encode_block_header(header: BlockHeader) -> bytes:
    """The 128 header bytes. Raises :class:`FormatError` for impossible values."""
    if not BLOCK_HEADER_LENGTH <= header.block_length <= _INT64_MAX:
        raise FormatError(f"block length {header.block_length} is not in [{BLOCK_HEADER_LENGTH}, 2^63)")
    if not 0 <= header.first_entry_id <= _INT64_MAX:
        raise FormatError(f"first entry id {header.first_entry_id} is not in [0, 2^63)")
    packed = _BLOCK_HEADER.pack(BLOCK_MAGIC, BLOCK_HEADER_LENGTH, header.block_length, header.first_entry_id)
    return packed + bytes(BLOCK_HEADER_LENGTH - len(packed))


def decode_block_header(data: bytes | memoryview) -> BlockHeader:
    """Parse the first 128 bytes of ``data`` as a block header."""
    if len(data) < BLOCK_HEADER_LENGTH:
        raise FormatError(f"block header needs {BLOCK_HEADER_LENGTH} bytes, got {len(data)}")
    magic, header_length, block_length, first_entry_id = _BLOCK_HEADER.unpack_from(data)
    if magic != BLOCK_MAGIC:
        raise FormatError(wrong_magic("block header", magic, BLOCK_MAGIC))
    if header_length != BLOCK_HEADER_LENGTH:
        raise FormatError(f"block header length is {header_length}, expected {BLOCK_HEADER_LENGTH}")
    if block_length < BLOCK_HEADER_LENGTH:
        raise FormatError(f"block length {block_length} is shorter than its header")
    if first_entry_id < 0:
        raise FormatError(f"block first entry id {first_entry_id} is negative")
    if any(bytes(data[_BLOCK_HEADER.size : BLOCK_HEADER_LENGTH])):
        raise FormatError("block header fill is not all zero")
    return BlockHeader(block_length=block_length, first_entry_id=first_entry_id)


def block_size(max_block_size: int, remaining_entries: int, remaining_bytes: int) -> int:
    """Size of the next block, as Pulsar computes it: the maximum, or exactly
    enough for what is left of the ledger (the last block)."""
    return min(max_block_size, remaining_entries * ENTRY_HEADER_LENGTH + remaining_bytes + BLOCK_HEADER_LENGTH)


def entry_fits(used: int, entry_length: int, size: int) -> bool:
    """Whether an entry of ``entry_length`` fits whole in a block of ``size``
    of which ``used`` bytes (header included) are taken."""
    return used + ENTRY_HEADER_LENGTH + entry_length <= size


def padding(length: int) -> bytes:
    """``length`` padding bytes. The pattern starts over at the padding's
    first byte wherever in the block that is (as Pulsar writes it), and is
    cut mid-pattern at the block's end."""
    whole, rest = divmod(length, len(PADDING))
    return PADDING * whole + PADDING[:rest]


class _BlockWriter:
    """Frames entries straight into one block's buffer."""

    def __init__(self, first_entry_id: int, size: int) -> None:
        self.out = bytearray(encode_block_header(BlockHeader(size, first_entry_id)))
        self.size = size
        self.next_id = first_entry_id
        # Kept until the index is written: 4 bytes an entry, not a Python int each.
        self.lengths = array("I")

    def add(self, payload: bytes | memoryview) -> bool:
        """Append the entry if it fits whole; report whether it did."""
        if not entry_fits(len(self.out), len(payload), self.size):
            return False
        if len(payload) > 2**31 - 1:
            raise FormatError(f"entry {self.next_id} is {len(payload)} bytes; the format's limit is 2^31-1")
        self.out += _ENTRY_HEADER.pack(len(payload), self.next_id)
        self.out += payload
        self.lengths.append(len(payload))
        self.next_id += 1
        return True

    def finish(self) -> bytearray:
        self.out += padding(self.size - len(self.out))
        return self.out


def encode_block(first_entry_id: int, size: int, payloads: Sequence[bytes | memoryview]) -> bytes:
    """A whole block of ``size`` bytes holding ``payloads`` as consecutive
    entries from ``first_entry_id``, padded to ``size``.

    Raises :class:`FormatError` if they do not fit (callers check with
    :func:`entry_fits` first)."""
    writer = _BlockWriter(first_entry_id, size)
    for payload in payloads:
        if not writer.add(payload):
            raise FormatError(
                f"entry {writer.next_id} ({len(payload)} bytes) does not fit in a block of {size} bytes "
                f"with {size - len(writer.out)} bytes left"
            )
    return bytes(writer.finish())


@dataclass(frozen=True)
class EncodedBlock:
    """One block of a data object, with its place in the index. ``data`` is
    a fresh buffer the caller owns (not copied again into ``bytes``)."""

    entry: IndexEntry
    data: bytes | bytearray
    entry_lengths: Sequence[int] = ()


def encode_data_blocks(
    payloads: Iterable[bytes | memoryview], *, entry_count: int, ledger_length: int, max_block_size: int
) -> Iterator[EncodedBlock]:
    """Cut a ledger's entries (ids ``0 .. entry_count-1``, ``ledger_length``
    payload bytes in all) into blocks exactly as Pulsar does.

    Lazy: it holds one block being filled plus one look-ahead entry, so a
    ledger of any size streams through in bounded memory. Raises
    :class:`FormatError` before yielding the block that would need it when
    an entry cannot fit even an empty block (Pulsar would silently stop and
    drop the rest of the ledger), and when the entries do not add up to
    ``entry_count`` and ``ledger_length``."""
    if max_block_size < BLOCK_HEADER_LENGTH + ENTRY_HEADER_LENGTH:
        raise FormatError(f"max block size {max_block_size} cannot hold a header and an entry")
    source = iter(payloads)
    pending = next(source, None)
    next_id = written = offset = 0
    part_id = 1
    while pending is not None:
        size = block_size(max_block_size, entry_count - next_id, ledger_length - written)
        writer = _BlockWriter(next_id, size)
        while pending is not None and writer.add(pending):
            written += len(pending)
            pending = next(source, None)
        if writer.next_id == next_id:
            assert pending is not None
            if size < max_block_size:
                raise FormatError(
                    f"ledger length {ledger_length} is less than its entries add up to (entry {next_id} is "
                    f"{len(pending)} bytes with {ledger_length - written} bytes of the length left)"
                )
            raise FormatError(
                f"entry {next_id} is {len(pending)} bytes, more than a block of {max_block_size} bytes can hold "
                f"({max_block_size - BLOCK_HEADER_LENGTH - ENTRY_HEADER_LENGTH}); raise the max block size"
            )
        yield EncodedBlock(IndexEntry(next_id, part_id, offset), writer.finish(), writer.lengths)
        next_id = writer.next_id
        offset += size
        part_id += 1
    if next_id != entry_count or written != ledger_length:
        raise FormatError(
            f"ledger metadata says {entry_count} entries and {ledger_length} bytes, the entries are {next_id} "
            f"and {written} bytes"
        )


@dataclass(frozen=True)
class Block:
    """A decoded data block: its header, its entries, where padding starts."""

    header: BlockHeader
    entries: tuple[tuple[int, bytes], ...]
    padding_start: int

    @property
    def last_entry_id(self) -> int:
        """Id of the block's last entry; ``first_entry_id - 1`` if it has none."""
        return self.header.first_entry_id + len(self.entries) - 1


def read_entry_header(data: bytes | memoryview, at: int, *, end: int, expected_id: int) -> int | None:
    """The payload length of the entry header at ``data[at:]``, which must
    be entry ``expected_id`` of a block whose bytes end at ``data[end]``;
    ``None`` where the padding starts instead (a negative length: the
    padding's first byte is 0xFE). The one entry-header parser, shared by
    the block decoder and the readers.

    Raises :class:`FormatError` (callers add where) for a header cut off by
    the block's end, an id that is not ``expected_id``, or a payload running
    past the block."""
    remaining = end - at
    if remaining < 4 or _LENGTH.unpack_from(data, at)[0] < 0:
        return None
    if remaining < ENTRY_HEADER_LENGTH:
        raise FormatError(f"entry header is cut off ({remaining} bytes left in the block)")
    length, entry_id = _ENTRY_HEADER.unpack_from(data, at)
    if entry_id != expected_id:
        raise FormatError(f"found entry id {entry_id}, expected {expected_id}")
    if length > remaining - ENTRY_HEADER_LENGTH:
        raise FormatError(f"entry {entry_id} of {length} bytes runs past its block")
    return int(length)


def decode_block(data: bytes | memoryview) -> Block:
    """Decode one whole block (exactly ``block_length`` bytes).

    Checks the header, that entries are framed whole, that their ids run
    consecutively from the header's first entry id, and that the rest is
    padding in phase. Raises :class:`FormatError` naming the offset."""
    view = memoryview(data)
    header = decode_block_header(view)
    if header.block_length != len(view):
        raise FormatError(f"block header says {header.block_length} bytes, but the block has {len(view)}")
    entries, padding_start = decode_block_body(view, header.first_entry_id)
    return Block(header=header, entries=entries, padding_start=padding_start)


def decode_block_body(
    view: memoryview, first_entry_id: int, *, start: int = BLOCK_HEADER_LENGTH
) -> tuple[tuple[tuple[int, bytes], ...], int]:
    """The entries framed after a block's header (``view`` is the whole
    block, its first entry at ``start``: after the 128-byte header, or a
    longer streaming one), and where the padding starts. Shared by the v1
    and the streaming (v2) block, which frame entries alike. Raises
    :class:`FormatError` naming the block offset where framing breaks."""
    positions = block_entry_positions(view, first_entry_id, start=start)
    entries = tuple(
        (entry_id, bytes(view[position + ENTRY_HEADER_LENGTH : after]))
        for entry_id, position, after in zip(
            itertools.count(first_entry_id), positions[:-1], positions[1:], strict=False
        )
    )
    return entries, positions[-1]


def block_entry_positions(
    view: memoryview | bytes, first_entry_id: int, *, start: int = BLOCK_HEADER_LENGTH
) -> list[int]:
    """Where each entry header of a block starts (``view`` is the whole
    block, its first entry at ``start``), then where its padding starts:
    one more position than entries.
    Entry ids must run from ``first_entry_id``, every entry must fit the
    block, and the rest must be padding in phase. Raises
    :class:`FormatError` naming the block offset where framing breaks."""
    positions: list[int] = []
    append = positions.append
    unpack = _ENTRY_HEADER.unpack_from
    end = len(view)
    position = previous = start
    next_id = first_entry_id
    # Whole, well-formed entries in one tight pass; the checked path below
    # explains whatever stops it.
    while position + ENTRY_HEADER_LENGTH <= end:
        length, found = unpack(view, position)
        after = position + ENTRY_HEADER_LENGTH + length
        if length < 0 or found != next_id or after > end:
            break
        append(position)
        previous, position = position, after
        next_id += 1
    if position < end:
        try:
            length = read_entry_header(view, position, end=end, expected_id=next_id)
        except FormatError as exc:
            if next_id > first_entry_id and str(exc).startswith("found entry id"):
                # The header where entry next_id should start is garbage: the
                # framing broke at the previous entry, whose length led here.
                (broken_length,) = _LENGTH.unpack_from(view, previous)
                raise FormatError(
                    f"block offset {previous}: entry {next_id - 1}'s length ({broken_length}) does not frame it: "
                    f"at block offset {position}, where entry {next_id} should start, {exc}"
                ) from None
            raise FormatError(f"block offset {position}: {exc}") from None
        assert length is None  # a whole entry would have been taken above
    if view[position:] != padding(end - position):
        if positions:
            (broken_length,) = _LENGTH.unpack_from(view, previous)
            raise FormatError(
                f"block offset {previous}: entry {next_id - 1}'s length ({broken_length}) does not frame it: what "
                f"follows at block offset {position} is neither an entry header nor the FE DC DE AD padding"
            )
        raise FormatError(f"padding from block offset {position} is not the FE DC DE AD pattern")
    append(position)
    return positions


def format_version_problem(metadata: Mapping[str, str]) -> str | None:
    """What is wrong with an object's format-version metadata (``None``:
    it says version 1, as every v1 object must)."""
    version = metadata.get(FORMAT_VERSION_KEY)
    if version != FORMAT_VERSION:
        return f"format version metadata ({FORMAT_VERSION_KEY}) is {version!r}, expected {FORMAT_VERSION!r}"
    return None
