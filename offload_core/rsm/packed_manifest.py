"""A decoded segment manifest held compactly. Pure.

A partition's listing holds every manifest of the partition at once (its
served ranges need them all), and one partition may hold every segment of
a store: as objects, a manifest's object sizes and index entries cost
some 600 bytes more than the plan of its segment. Held here as the
metadata (which the served ranges and the readers use) and one ``bytes``
of the rest, made back into a :class:`~.layout.SegmentManifest` when a
reader asks for it."""

from __future__ import annotations

import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import FormatError
from .layout import SegmentManifest
from .types import RemoteLogIndexEntry, RemoteLogSegmentMetadata

__all__ = ["PackedManifest", "pack_manifest"]

_COUNT = struct.Struct("<I")  # object sizes, and each name's UTF-8 length
_SIZE = struct.Struct("<q")
_ENTRY = struct.Struct("<qqqqqq")  # first and last offset, first and last timestamp, position, length


@dataclass(frozen=True, slots=True)
class PackedManifest:
    """A :class:`~.layout.SegmentManifest`: its ``metadata`` as it is, its
    object sizes and index entries packed in ``packed``."""

    metadata: RemoteLogSegmentMetadata
    packed: bytes

    @property
    def object_sizes(self) -> Mapping[str, int]:
        return self._sizes()[0]

    @property
    def index_entries(self) -> tuple[RemoteLogIndexEntry, ...]:
        return self.unpacked().index_entries

    def unpacked(self) -> SegmentManifest:
        """The manifest, equal to the one packed."""
        sizes, at = self._sizes()
        segment_id, start = self.metadata.segment_id, self.metadata.start_offset
        entries = tuple(RemoteLogIndexEntry(segment_id, start, *row) for row in _ENTRY.iter_unpack(self.packed[at:]))
        return SegmentManifest(self.metadata, sizes, entries)

    def _sizes(self) -> tuple[dict[str, int], int]:
        """The object sizes, and where the index entries begin."""
        (count,), at = _COUNT.unpack_from(self.packed), _COUNT.size
        sizes = {}
        for _ in range(count):
            (length,) = _COUNT.unpack_from(self.packed, at)
            at += _COUNT.size
            name = sys.intern(self.packed[at : at + length].decode())
            (sizes[name],) = _SIZE.unpack_from(self.packed, at + length)
            at += length + _SIZE.size
        return sizes, at


def pack_manifest(manifest: SegmentManifest, *, key: str) -> PackedManifest:
    """``manifest`` packed. Its index entries must be the segment's own (of
    its segment id and start offset, as :func:`~.layout.decode_manifest`
    makes them). :class:`FormatError` naming ``key`` for a size, offset,
    timestamp or position outside Kafka's 64-bit longs (no copy writes
    one: the object is damaged)."""
    parts = [_COUNT.pack(len(manifest.object_sizes))]
    try:
        for name, size in manifest.object_sizes.items():
            encoded = name.encode()
            parts += [_COUNT.pack(len(encoded)), encoded, _SIZE.pack(size)]
        parts += [_ENTRY.pack(e.first_offset, e.last_offset, e.first_timestamp, e.last_timestamp, e.position, e.length)
                  for e in manifest.index_entries]  # fmt: skip
    except (struct.error, UnicodeEncodeError) as exc:
        raise FormatError(f"{key} is not a segment manifest ({exc}): the object is damaged") from None
    return PackedManifest(manifest.metadata, b"".join(parts))
