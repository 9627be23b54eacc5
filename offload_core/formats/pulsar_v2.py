"""Pulsar's PIP-76 streaming-offload object format (version 2). Pure: no I/O.

A *segment* holds entries of one or more consecutive ledgers (a ledger may
also span several segments) as two objects:

* the **data object** ``{uuid}``: a sequence of blocks, one multipart part
  each, one ledger per block. A block is a 128-byte header (``int32 magic
  0x26A66D32 | int64 header length 128 | int64 block length | int64 first
  entry id | int64 ledger id | zeros``; read as Pulsar reads it: any header
  length from 128 up, the index's data header length saying where entries
  start, and whatever fills the rest), then whole entries framed as in v1
  (``int32 length | int64 entry id | payload``), then the v1 padding
  ``FE DC DE AD`` up to the block length. Grouping follows Pulsar's
  consistent (OpenDAL) loop: an entry joins the current block while the
  payload bytes already in it are below the streaming block size and it is
  of the same ledger; so the entry that reaches or crosses the size is its
  block's last, and a block is ``max(streaming block size, 128 + 12 n +
  payload bytes)`` long (an over-full block is not padded).
* the **index object** ``{uuid}-index``: ``int32 magic 0x3D1FB0BC | int32
  index length | int64 data object length | int64 data header length (128)``
  then, per ledger, ``int64 ledger id | int32 row count | int32 metadata
  length | Pulsar LedgerInfo protobuf | row count x (int64 first entry id,
  int32 part id, int64 block offset)``, offsets counted across the whole
  data object and part ids running 1, 2, 3 ... in offset order. Its codec
  lives in :mod:`offload_core.formats.segment_index`, the blocks' in
  :mod:`offload_core.formats.segment_blocks`; both are re-exported here.

Pulsar writes the ledgers of the index in Java ``HashMap<Long, ...>``
iteration order (:func:`java_hash_map_order`); decoders accept any order and
keep it, so ``encode_index(decode_index(b)) == b``. All integers are
big-endian. Decoders raise only :class:`FormatError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .segment_blocks import (
    BLOCK_HEADER_LENGTH,
    BLOCK_MAGIC,
    BlockGrouper,
    EncodedSegmentBlock,
    SegmentBlock,
    StreamingBlockHeader,
    decode_block,
    decode_block_header,
    encode_block_header,
    encode_segment_blocks,
    streaming_block_length,
)
from .segment_index import (
    INDEX_MAGIC,
    LedgerSection,
    SegmentIndex,
    SegmentRow,
    decode_index,
    encode_index,
    index_for_blocks,
    java_hash_map_order,
    ledger_info_bytes,
)

__all__ = [
    "BLOCK_HEADER_LENGTH",
    "BLOCK_MAGIC",
    "INDEX_MAGIC",
    "BlockGrouper",
    "EncodedSegmentBlock",
    "LedgerSection",
    "SegmentBlock",
    "SegmentIndex",
    "SegmentKey",
    "SegmentRow",
    "StreamingBlockHeader",
    "decode_block",
    "decode_block_header",
    "decode_index",
    "encode_block_header",
    "encode_index",
    "encode_segment_blocks",
    "index_for_blocks",
    "java_hash_map_order",
    "ledger_info_bytes",
    "parse_segment_key",
    "segment_data_key",
    "segment_index_key",
    "streaming_block_length",
]

# -- keys ---------------------------------------------------------------


@dataclass(frozen=True)
class SegmentKey:
    """What a segment object's key says: the ``prefix`` before the segment
    ``uuid`` and whether it is the index object, or the entry-offsets
    object segments written before the section moved into the data object
    have beside it."""

    prefix: str
    uuid: str
    is_index: bool
    is_entry_offsets: bool = False


def segment_data_key(uuid: str) -> str:
    """``{uuid}``, the segment's data object key."""
    return uuid


def segment_index_key(uuid: str) -> str:
    """``{uuid}-index``, the segment's index object key."""
    return f"{uuid}-index"


def segment_entry_offsets_key(uuid: str) -> str:
    """``{uuid}-entry-offsets``: the object segments written before the
    entry-offsets section moved into the data object (see
    :mod:`offload_core.formats.entry_offsets`) keep it in; read and
    deleted, never written."""
    return f"{uuid}-entry-offsets"


_KEY = re.compile(
    r"(?:^|(?<=[/_.:=-]))"
    r"(?P<uuid>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"
    r"(?P<suffix>-index|-entry-offsets)?$"
)


def parse_segment_key(key: str) -> SegmentKey | None:
    """Parse a v2 key (any prefix before the uuid, ending in a separator);
    ``None`` for anything else, v1 ledger keys included."""
    match = _KEY.search(key)
    if match is None:
        return None
    suffix = match["suffix"]
    return SegmentKey(prefix=key[: match.start()], uuid=match["uuid"], is_index=suffix == "-index",
                      is_entry_offsets=suffix == "-entry-offsets")  # fmt: skip
