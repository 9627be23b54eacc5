"""An object key in fewer bytes, for what planning holds of many keys on
the Spark driver and in the partitions it returns. A key is its UTF-8
bytes, but one that ends in a uuid as Pulsar writes it (``<uuid>``,
``<uuid>-ledger-<id>``: a segment's data key, a v1 ledger's) is the text
before the uuid, a ``0xFF`` byte (never in UTF-8), the uuid's 16 bytes and
the ledger id's 8, when unpacking them gives the key back exactly: 17
bytes for a bare segment key of 36 characters. Pure."""

from __future__ import annotations

import re
import struct
import uuid

__all__ = ["pack_key", "unpack_key"]

_MARK = b"\xff"
_UUID_TAIL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:-ledger-[0-9]{1,20})?\Z")
_LEDGER = struct.Struct("<Q")
_LEDGER_INFIX = "-ledger-"


def pack_key(key: str) -> bytes:
    """``key`` packed; :func:`unpack_key` gives it back. Raises
    :class:`UnicodeEncodeError` for a key that is not UTF-8 text."""
    match = _UUID_TAIL.search(key)
    if match is not None:
        head = key[: match.start()]
        uid = uuid.UUID(key[match.start() : match.start() + 36]).bytes
        tail = key[match.start() + 36 :]
        ledger = int(tail[len(_LEDGER_INFIX) :]) if tail else None
        if ledger is None or ledger < 2**64:
            packed = head.encode() + _MARK + uid + (b"" if ledger is None else _LEDGER.pack(ledger))
            if unpack_key(packed) == key:  # a ledger id with leading zeros would not come back
                return packed
    return key.encode()


def unpack_key(packed: bytes | bytearray) -> str:
    """The key :func:`pack_key` packed into ``packed``."""
    mark = packed.find(_MARK)
    if mark < 0:
        return packed.decode()
    uid = str(uuid.UUID(bytes=bytes(packed[mark + 1 : mark + 17])))
    rest = packed[mark + 17 :]
    tail = f"{_LEDGER_INFIX}{_LEDGER.unpack(rest)[0]}" if rest else ""
    return f"{packed[:mark].decode()}{uid}{tail}"
