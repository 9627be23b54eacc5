"""The ``crc32c`` chunk transform (see README.md)."""

from __future__ import annotations

import struct
from collections.abc import Mapping

import google_crc32c

from offload_core import hookimpl
from offload_core.errors import FormatError

__all__ = ["Crc32cTransform"]

_TRAILER = struct.Struct(">I")


class _Codec:
    """``chunk | crc`` where the CRC covers the chunk, ``binding`` (the
    object's id; empty for version 1 chunks) and the chunk's index, so a
    chunk moved within its object or copied from another fails too."""

    def __init__(self, binding: bytes) -> None:
        self._binding = binding

    def _crc(self, chunk: bytes, index: int) -> int:
        return int(google_crc32c.extend(google_crc32c.value(chunk), self._binding + index.to_bytes(8, "big")))

    def encode(self, chunk: bytes, index: int) -> bytes:
        return chunk + _TRAILER.pack(self._crc(chunk, index))

    def decode(self, stored: bytes, index: int) -> bytes:
        if len(stored) < _TRAILER.size:
            raise FormatError(f"chunk {index} is shorter than its CRC-32C: the object is damaged")
        chunk = stored[: -_TRAILER.size]
        (expected,) = _TRAILER.unpack_from(stored, len(chunk))
        if self._crc(chunk, index) != expected:
            raise FormatError(f"chunk {index} fails its CRC-32C: the object is damaged or its chunks were moved")
        return chunk


class Crc32cTransform:
    """Version 2 chunks bind the object id; version 1 chunks (written
    before objects had ids) cover the chunk and its index only."""

    name = "crc32c"
    version = 2
    distribution = "offload-plugin-crc32c"

    def for_writing(self, *, object_id: bytes) -> tuple[_Codec, Mapping[str, str]]:
        return _Codec(object_id), {}

    def for_reading(self, params: Mapping[str, str], *, version: int, object_id: bytes | None) -> _Codec:
        if version < 2:
            return _Codec(b"")
        if object_id is None:
            raise FormatError("its crc32c chunks are bound to an object id, which its chunk table lacks: damaged")
        return _Codec(object_id)


@hookimpl
def offload_core_register_transforms(register) -> None:  # type: ignore[no-untyped-def]
    register(Crc32cTransform())
