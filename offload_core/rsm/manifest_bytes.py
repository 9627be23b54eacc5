"""Reading the segment manifests a listing found, a few at a time, and
keeping their bytes for a reader that lists the store again and again
(a ``kafka-remote`` ``readStream`` query lists it every trigger).

A manifest is written once, when its segment is complete (our layout and
Aiven's both write it last), and deleted with the segment, so the bytes
read once stand for it for as long as the listing shows that key with
the same size: a trigger then reads only the manifests tiered since the
last, where it read every one."""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Sequence

from ..errors import NotFoundError
from ..reads_ahead import map_ahead
from ..storage import StorageDriver

__all__ = ["ManifestBytes", "read_manifests"]


class ManifestBytes:
    """The manifests' bytes read so far, by listing group (a partition's
    key prefix, or a whole store's): each group holds the manifests its
    last listing showed, so one deleted since is let go. Safe to share by
    the reads of one listing (several threads); one listing of a group at
    a time."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[str, tuple[int, bytes]]] = {}

    def held(self, group: str) -> dict[str, tuple[int, bytes]]:
        """The bytes of ``group``'s manifests, by key, with their listed size."""
        return self._groups.get(group, {})

    def replace(self, group: str, manifests: dict[str, tuple[int, bytes]]) -> None:
        """Hold ``manifests`` for ``group``, and no other of its manifests."""
        self._groups[group] = manifests


def read_manifests(
    driver: StorageDriver, listed: Sequence[tuple[str, int]], *, kept: ManifestBytes | None = None, group: str = ""
) -> Generator[bytes | None, None, None]:
    """The bytes of each manifest in ``listed`` (its key and its listed
    size), in order, read a few at a time
    (:func:`~offload_core.reads_ahead.map_ahead`); ``None`` for one
    deleted since the listing. With ``kept``, a manifest ``kept`` holds
    for ``group`` at that size is not read again, and once the last is
    given, ``kept`` holds what was found for ``group`` (what the listing
    no longer shows is let go). Raises what a read raised."""
    held = kept.held(group) if kept is not None else {}

    def read(item: tuple[str, int]) -> bytes | None:
        key, size = item
        hit = held.get(key)
        if hit is not None and hit[0] == size:
            return hit[1]
        try:
            return driver.read(key)
        except NotFoundError:
            return None  # deleted since the listing

    found: dict[str, tuple[int, bytes]] = {}
    # Threads only wait on the store: the caller decodes, which would contend for the GIL there.
    with contextlib.closing(map_ahead(read, listed)) as stored:
        for (key, size), data in zip(listed, stored, strict=True):
            if data is not None and kept is not None:
                found[key] = (size, data)
            yield data
    if kept is not None:
        kept.replace(group, found)
