"""The constants of Pulsar's PIP-17 (v1) format, shared by its block codec
(:mod:`offload_core.formats.pulsar_v1`) and its index codec
(:mod:`offload_core.formats.pulsar_v1_index`)."""

from __future__ import annotations

from .magics import V1_BLOCK_MAGIC, V1_INDEX_MAGIC

__all__ = [
    "BLOCK_HEADER_LENGTH",
    "BLOCK_MAGIC",
    "ENTRY_HEADER_LENGTH",
    "FORMAT_VERSION",
    "FORMAT_VERSION_KEY",
    "INDEX_MAGIC",
    "PADDING",
]

BLOCK_MAGIC = V1_BLOCK_MAGIC
BLOCK_HEADER_LENGTH = 128
ENTRY_HEADER_LENGTH = 12
INDEX_MAGIC = V1_INDEX_MAGIC
PADDING = bytes.fromhex("FEDCDEAD")
FORMAT_VERSION_KEY = "s3managedledgeroffloaderformatversion"
FORMAT_VERSION = "1"
