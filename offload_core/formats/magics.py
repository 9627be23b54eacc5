"""The magic numbers that open Pulsar's offload objects, so that a decoder
handed the other format's object says which one it is. Pure."""

from __future__ import annotations

__all__ = [
    "V1_BLOCK_MAGIC",
    "V1_INDEX_MAGIC",
    "V2_BLOCK_MAGIC",
    "V2_INDEX_MAGIC",
    "wrong_magic",
]

V1_BLOCK_MAGIC = 0xFBDBABCB
V1_INDEX_MAGIC = 0xDE47DE47
V2_BLOCK_MAGIC = 0x26A66D32
V2_INDEX_MAGIC = 0x3D1FB0BC

_KNOWN = {
    V1_BLOCK_MAGIC: "a ledger-offload (v1) data block",
    V1_INDEX_MAGIC: "a ledger-offload (v1) index object",
    V2_BLOCK_MAGIC: "a streaming-offload (PIP-76, v2) segment block",
    V2_INDEX_MAGIC: "a streaming-offload (PIP-76, v2) segment index object",
}


def wrong_magic(what: str, found: int, expected: int) -> str:
    """The message for ``what`` opening with ``found`` instead of
    ``expected``; names the other format when ``found`` is one of ours."""
    message = f"{what} magic is {found:#010x}, expected {expected:#010x}"
    other = _KNOWN.get(found)
    if other is not None:
        message += f": this is {other}, read it with the reader for that format"
    return message
