"""A store's listing kept on the Spark driver for planning to list again
by prefix: its keys, in the listing's (sorted) order, in blocks of
:data:`BLOCK`, each held as one deflated blob
(:mod:`offload_core.deflated_names`) and found by its first key. Keys of
offloads with random uuids take some 25 bytes each this way, where a list
of strings takes about 125 and one UTF-8 buffer with their ends
(:class:`~.key_lists.KeyList`) about 75; finding a prefix inflates one
block (some 16 KB of keys)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator

from ..deflated_names import deflated_names, inflated_names
from ..errors import InvalidKeyError, StateError

__all__ = ["BLOCK", "SortedKeys"]

BLOCK = 256
"""Keys a block holds: the first key and the blob's overhead, some 300
bytes a block, come to about 1 byte a key, and a block inflated to find a
prefix is still small."""


class SortedKeys:
    """Keys appended in sorted order, each with its number (its place among
    them), listed again by prefix. Any text a driver lists is kept as it
    is, names the operating system could not decode (lone surrogates)
    included. ``block``: keys a block holds (default :data:`BLOCK`)."""

    def __init__(self, block: int | None = None) -> None:
        self._block = BLOCK if block is None else block
        self._blobs: list[bytes] = []  # every full block, deflated
        self._firsts: list[str] = []  # each block's first key, the filling one's too
        self._filling: list[str] = []
        self._last = ""
        self._count = 0

    def append(self, key: str) -> None:
        """Add ``key``, numbered :func:`len` before it was added. Raises
        :class:`StateError` if it sorts before the key added last (a driver
        whose listing is not sorted by key, as every driver's must be:
        found by prefix, keys would be missed), and
        :class:`~offload_core.errors.InvalidKeyError` for a key holding a
        NUL byte (no valid key does)."""
        if key < self._last:
            raise StateError(
                f"the store listed {key!r} after {self._last!r}: a listing kept for planning is found again by "
                "prefix in key order, which every storage driver must list in (StorageDriver.list; "
                "offload_core.testing.DriverContract checks it): fix the driver's list()"
            )
        if "\0" in key:  # refused as it comes, whether or not its block is ever deflated
            raise InvalidKeyError(f"the store listed {key!r}, which holds a NUL byte no valid key may: it cannot be "
                                  "kept for planning; remove or rename the object")  # fmt: skip
        filling = self._filling
        if not filling:
            self._firsts.append(key)
        filling.append(key)
        self._last = key
        self._count += 1
        if len(filling) == self._block:
            self._blobs.append(deflated_names(filling))
            self._filling = []

    def __len__(self) -> int:
        return self._count

    def starting_with(self, prefix: str) -> Iterator[tuple[int, str]]:
        """The number and key of every key starting with ``prefix``, in
        order, each block inflated as it is reached."""
        # The last block starting before the prefix: every block before it ends before the prefix.
        number = max(bisect_left(self._firsts, prefix) - 1, 0)
        while number < len(self._firsts):
            keys = self._filling if number == len(self._blobs) else list(inflated_names(self._blobs[number]))
            at = bisect_left(keys, prefix)
            for key in keys[at:]:
                if not key.startswith(prefix):
                    return
                yield number * self._block + at, key
                at += 1
            number += 1
