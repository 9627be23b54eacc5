"""Plain value types shared by every layer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["Entry", "ObjectInfo"]


@dataclass(frozen=True)
class ObjectInfo:
    """What a store knows about one object.

    ``metadata`` is the user metadata written with the object (string keys
    and values); ``etag`` is the backend's version tag where it has one.
    """

    key: str
    size: int
    metadata: Mapping[str, str] = field(default_factory=dict)
    etag: str | None = None

    def __post_init__(self) -> None:
        # Frozen all the way down: callers must not mutate a stat result.
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))

    def __hash__(self) -> int:
        return hash((self.key, self.size, tuple(sorted(self.metadata.items())), self.etag))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ObjectInfo):
            return NotImplemented
        return (self.key, self.size, dict(self.metadata), self.etag) == (
            other.key,
            other.size,
            dict(other.metadata),
            other.etag,
        )


@dataclass(frozen=True)
class Entry:
    """One log entry: its ledger, its id within the ledger, its bytes."""

    ledger_id: int
    entry_id: int
    data: bytes
