"""The header at the start of every PIP-76 segment block. Pure: no I/O.
Re-exported by :mod:`offload_core.formats.segment_blocks` and
:mod:`offload_core.formats.pulsar_v2`."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import FormatError
from .magics import V2_BLOCK_MAGIC, wrong_magic
from .v1_layout import BLOCK_HEADER_LENGTH

__all__ = ["BLOCK_HEADER_LENGTH", "BLOCK_MAGIC", "StreamingBlockHeader", "decode_block_header", "encode_block_header"]

BLOCK_MAGIC = V2_BLOCK_MAGIC

_BLOCK_HEADER = struct.Struct(">Iqqqq")
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class StreamingBlockHeader:
    """The header at the start of every segment block: 128 bytes as Pulsar
    writes it, ``header_length`` bytes as its reader allows."""

    block_length: int
    first_entry_id: int
    ledger_id: int
    header_length: int = BLOCK_HEADER_LENGTH


def encode_block_header(header: StreamingBlockHeader) -> bytes:
    """The header's bytes, zero-filled to its length. Raises
    :class:`FormatError` for impossible values."""
    if not BLOCK_HEADER_LENGTH <= header.header_length <= header.block_length:
        raise FormatError(f"header length {header.header_length} is not in [{BLOCK_HEADER_LENGTH}, block length]")
    if not BLOCK_HEADER_LENGTH <= header.block_length <= _INT64_MAX:
        raise FormatError(f"block length {header.block_length} is not in [{BLOCK_HEADER_LENGTH}, 2^63)")
    if not 0 <= header.first_entry_id <= _INT64_MAX:
        raise FormatError(f"first entry id {header.first_entry_id} is not in [0, 2^63)")
    if not 0 <= header.ledger_id <= _INT64_MAX:
        raise FormatError(f"ledger id {header.ledger_id} is not in [0, 2^63)")
    packed = _BLOCK_HEADER.pack(
        BLOCK_MAGIC, header.header_length, header.block_length, header.first_entry_id, header.ledger_id
    )
    return packed + bytes(header.header_length - len(packed))


def decode_block_header(data: bytes | memoryview) -> StreamingBlockHeader:
    """Parse the start of ``data`` (at least 128 bytes) as a segment block
    header. Accepts what Pulsar's reader accepts: a header length of 128
    or more (the bytes after the fields are skipped, whatever they hold;
    ``StreamingDataBlockHeaderImpl.fromStream``), no longer than the block.
    Raises :class:`FormatError` for a wrong magic, a header length under
    128 or past the block, a block length shorter than 128, or a negative
    entry or ledger id."""
    if len(data) < BLOCK_HEADER_LENGTH:
        raise FormatError(f"block header needs {BLOCK_HEADER_LENGTH} bytes, got {len(data)}")
    magic, header_length, block_length, first_entry_id, ledger_id = _BLOCK_HEADER.unpack_from(data)
    if magic != BLOCK_MAGIC:
        raise FormatError(wrong_magic("segment block header", magic, BLOCK_MAGIC))
    if block_length < BLOCK_HEADER_LENGTH:
        raise FormatError(f"block length {block_length} is shorter than a header")
    if not BLOCK_HEADER_LENGTH <= header_length <= block_length:
        raise FormatError(f"block header length is {header_length}, not in [{BLOCK_HEADER_LENGTH}, {block_length}] "
                          "(128 up to the block's length)")  # fmt: skip
    if first_entry_id < 0 or ledger_id < 0:
        raise FormatError(f"block first entry id {first_entry_id} / ledger id {ledger_id} is negative")
    return StreamingBlockHeader(block_length=block_length, first_entry_id=first_entry_id, ledger_id=ledger_id,
                                header_length=header_length)  # fmt: skip
