"""The ``zstd`` chunk transform (see README.md)."""

from __future__ import annotations

from collections.abc import Mapping

import zstandard

from offload_core import hookimpl
from offload_core.errors import ConfigError, FormatError

__all__ = ["ZstdTransform"]

DISTRIBUTION = "offload-plugin-zstd"


class _Codec:
    # zstandard's (de)compressor objects are not thread-safe, and read-ahead
    # decodes chunks of one object on several threads: one per call.
    def __init__(self, level: int) -> None:
        self._level = level

    def encode(self, chunk: bytes, index: int) -> bytes:
        return zstandard.ZstdCompressor(level=self._level, write_checksum=True).compress(chunk)

    def decode(self, stored: bytes, index: int) -> bytes:
        try:
            return zstandard.ZstdDecompressor().decompress(stored)
        except zstandard.ZstdError as exc:
            raise FormatError(f"chunk {index} is not an intact zstd frame ({exc}): the object is damaged") from None


class ZstdTransform:
    """zstd at ``level`` (1-22), one frame per chunk, content checksums on."""

    name = "zstd"
    version = 1
    distribution = DISTRIBUTION

    def __init__(self, level: int = 3) -> None:
        if not isinstance(level, int) or not 1 <= level <= 22:
            raise ConfigError(f"zstd level must be 1-22, got {level!r}")
        self.level = level

    def with_options(self, options: Mapping[str, str]) -> ZstdTransform:
        """``zstd:level=9`` in a chain; :class:`ConfigError` for anything else."""
        unknown = set(options) - {"level"}
        if unknown:
            raise ConfigError(f"zstd takes only level=1..22, not {sorted(unknown)}")
        try:
            return ZstdTransform(int(options.get("level", self.level)))
        except ValueError:
            raise ConfigError(f"zstd level {options.get('level')!r} is not a number") from None

    # zstd has no check to bind the object id into: the chunk table's CRC
    # of each chunk binds it to its object.
    def for_writing(self, *, object_id: bytes) -> tuple[_Codec, Mapping[str, str]]:
        return _Codec(self.level), {"level": str(self.level)}

    def for_reading(self, params: Mapping[str, str], *, version: int, object_id: bytes | None) -> _Codec:
        return _Codec(3)  # the level only matters when compressing


@hookimpl
def offload_core_register_transforms(register) -> None:  # type: ignore[no-untyped-def]
    register(ZstdTransform())
