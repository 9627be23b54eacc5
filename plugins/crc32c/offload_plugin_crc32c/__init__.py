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
    """``chunk | crc`` where the CRC covers the chunk and its index, so a
    chunk swapped with another fails too."""

    def encode(self, chunk: bytes, index: int) -> bytes:
        return chunk + _TRAILER.pack(google_crc32c.value(chunk + index.to_bytes(8, "big")))

    def decode(self, stored: bytes, index: int) -> bytes:
        if len(stored) < _TRAILER.size:
            raise FormatError(f"chunk {index} is shorter than its CRC-32C: the object is damaged")
        chunk = stored[: -_TRAILER.size]
        (expected,) = _TRAILER.unpack_from(stored, len(chunk))
        if google_crc32c.value(chunk + index.to_bytes(8, "big")) != expected:
            raise FormatError(f"chunk {index} fails its CRC-32C: the object is damaged or its chunks were moved")
        return chunk


class Crc32cTransform:
    name = "crc32c"
    version = 1
    distribution = "offload-plugin-crc32c"

    def for_writing(self) -> tuple[_Codec, Mapping[str, str]]:
        return _Codec(), {}

    def for_reading(self, params: Mapping[str, str]) -> _Codec:
        return _Codec()


@hookimpl
def offload_core_register_transforms(register) -> None:  # type: ignore[no-untyped-def]
    register(Crc32cTransform())
