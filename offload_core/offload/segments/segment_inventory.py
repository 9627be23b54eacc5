"""Finding PIP-76 segments in a store by their object keys."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ...errors import NotFoundError
from ...formats import pulsar_v2 as v2
from ...model import ObjectInfo
from ...storage import StorageDriver

__all__ = ["StoredSegment", "find_segments", "select_segment"]


@dataclass(frozen=True)
class StoredSegment:
    """One segment's objects; any may be missing (a segment needs its data
    and index; the entry offsets are optional)."""

    prefix: str
    uuid: str
    data: ObjectInfo | None
    index: ObjectInfo | None
    entry_offsets: ObjectInfo | None = None

    @property
    def complete(self) -> bool:
        return self.data is not None and self.index is not None


def group_segments(objects: Iterable[ObjectInfo]) -> list[StoredSegment]:
    """Group segment objects (data, index, entry offsets) by (prefix,
    uuid); other keys, v1 ledger objects included, are ignored. Sorted by
    prefix and uuid."""
    found: dict[tuple[str, str], dict[str, ObjectInfo]] = {}
    for info in objects:
        parsed = v2.parse_segment_key(info.key)
        if parsed is not None:
            kind = "index" if parsed.is_index else "entry_offsets" if parsed.is_entry_offsets else "data"
            found.setdefault((parsed.prefix, parsed.uuid), {})[kind] = info
    return [
        StoredSegment(prefix, uuid, parts.get("data"), parts.get("index"), parts.get("entry_offsets"))
        for (prefix, uuid), parts in sorted(found.items())
    ]


def find_segments(driver: StorageDriver, prefix: str = "") -> list[StoredSegment]:
    """Every segment (complete or not) whose keys start with ``prefix``."""
    return group_segments(driver.list(prefix))


def select_segment(segments: Iterable[StoredSegment], uuid: str) -> StoredSegment:
    """The segment ``uuid``. Raises :class:`NotFoundError` if it is not there."""
    for segment in segments:
        if segment.uuid.lower() == uuid.lower():
            return segment
    raise NotFoundError(f"no segment {uuid} found; list what is there with `offload segments ls`")
