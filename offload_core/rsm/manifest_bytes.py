"""Reading the segment manifests a listing found, a few at a time, and
keeping their bytes for a reader that lists the store again and again
(a ``kafka-remote`` ``readStream`` query lists it every trigger).

A manifest is written once, when its segment is complete (our layout and
Aiven's both write it last), and deleted with the segment, so the bytes
read once stand for it for as long as the listing shows that key with
the same size: a trigger then reads only the manifests tiered since the
last, where it read every one. What is kept is capped (a manifest of our
layout holds an index entry a MiB of its segment, some 70 KB for 1 GiB):
past :data:`DEFAULT_BUDGET`, the manifests a listing finds last are read
again each time."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Iterable

from ..errors import NotFoundError
from ..reads_ahead import map_ahead
from ..storage import StorageDriver

__all__ = ["DEFAULT_BUDGET", "ManifestBytes", "read_manifests"]

DEFAULT_BUDGET = 64 * 2**20
"""The manifest bytes a :class:`ManifestBytes` keeps at most: some 100,000
small segments' (our layout, one index entry each), or some 900 of 1 GiB."""


class ManifestBytes:
    """The manifests' bytes read so far, by listing group (a partition's
    key prefix, or a whole store's), ``budget`` bytes at most: each group
    holds the manifests its last listing showed, so one deleted since is
    let go. Safe to share by the reads of one listing (several threads);
    one listing of a group at a time."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self.budget = budget
        self._groups: dict[str, dict[str, tuple[int, bytes]]] = {}
        self._group_bytes: dict[str, int] = {}
        self._bytes = 0

    def held(self, group: str) -> dict[str, tuple[int, bytes]]:
        """The bytes of ``group``'s manifests, by key, with their listed size."""
        return self._groups.get(group, {})

    def room(self, group: str) -> int:
        """The bytes a new listing of ``group`` may keep: the budget less
        what the other groups hold."""
        return self.budget - (self._bytes - self._group_bytes.get(group, 0))

    def replace(self, group: str, manifests: dict[str, tuple[int, bytes]]) -> None:
        """Hold ``manifests`` for ``group`` (at most :meth:`room` bytes),
        and no other of its manifests."""
        size = sum(len(data) for _, data in manifests.values())
        self._bytes += size - self._group_bytes.pop(group, 0)
        self._groups.pop(group, None)
        if manifests:
            self._groups[group] = manifests
            self._group_bytes[group] = size


def read_manifests(
    driver: StorageDriver, listed: Iterable[tuple[str, int]], *, kept: ManifestBytes | None = None, group: str = ""
) -> Generator[bytes | None, None, None]:
    """The bytes of each manifest in ``listed`` (its key and its listed
    size), in order, read a few at a time
    (:func:`~offload_core.reads_ahead.map_ahead`; ``listed`` is taken only
    as far as the reads ahead, so a generator may make the keys as they are
    read rather than a listing hold them all); ``None`` for one
    deleted since the listing. With ``kept``, a manifest ``kept`` holds
    for ``group`` at that size is not read again, and once the last is
    given, ``kept`` holds what was found for ``group``, in order, as far
    as its :meth:`~ManifestBytes.room` (what the listing no longer shows
    is let go). Raises what a read raised."""
    held = kept.held(group) if kept is not None else {}
    room = kept.room(group) if kept is not None else 0

    def read(item: tuple[str, int]) -> tuple[str, int, bytes | None]:
        key, size = item
        hit = held.get(key)
        if hit is not None and hit[0] == size:
            return key, size, hit[1]
        try:
            return key, size, driver.read(key)
        except NotFoundError:
            return key, size, None  # deleted since the listing

    found: dict[str, tuple[int, bytes]] = {}
    # Threads only wait on the store: the caller decodes, which would contend for the GIL there.
    with contextlib.closing(map_ahead(read, listed)) as stored:
        for key, size, data in stored:
            if data is not None and len(data) <= room:
                found[key] = (size, data)
                room -= len(data)
            yield data
    if kept is not None:
        kept.replace(group, found)
