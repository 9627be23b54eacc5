"""Object keys collected on the Spark driver as a listing passes, held as
one buffer of the keys packed (:mod:`~offload_core.spark.key_packing`: a
segment's data key in 17 bytes, any other key in its UTF-8 bytes) and each
key's end in it (8 bytes), where a list of strings costs some 50 bytes
more a key than its length (the string object's header and the list's
reference)."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import overload

from ..keys import validate_key
from .key_packing import pack_key, unpack_key

__all__ = ["KeyList"]


class KeyList(Sequence[str]):
    """An append-only sequence of keys, each decoded again when asked for."""

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = array("Q")

    def append(self, key: str) -> None:
        """Add ``key``. Raises :class:`InvalidKeyError` naming a key that is
        not UTF-8 text (a file name the filesystem driver listed as it found it)."""
        try:
            encoded = pack_key(key)
        except UnicodeEncodeError:
            validate_key(key)
            raise
        self._blob += encoded
        self._ends.append(len(self._blob))

    def __len__(self) -> int:
        return len(self._ends)

    @overload
    def __getitem__(self, number: int) -> str: ...

    @overload
    def __getitem__(self, number: slice) -> list[str]: ...

    def __getitem__(self, number: int | slice) -> str | list[str]:
        if isinstance(number, slice):
            return [self[at] for at in range(*number.indices(len(self)))]
        end = self._ends[number]  # raises IndexError past either end, as a list does
        start = self._ends[number - 1] if number % len(self._ends) else 0
        return unpack_key(self._blob[start:end])

    def __iter__(self) -> Iterator[str]:
        start = 0
        for end in self._ends:
            yield unpack_key(self._blob[start:end])
            start = end
