"""Plain value types shared by every layer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import NamedTuple

from .errors import ConfigError

__all__ = ["Entry", "ObjectInfo", "Position", "Temporary"]


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

    def __reduce__(self) -> tuple[type[ObjectInfo], tuple[str, int, dict[str, str], str | None]]:
        # A mapping proxy does not pickle; Spark ships listings to executors.
        return (ObjectInfo, (self.key, self.size, dict(self.metadata), self.etag))

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
class Temporary:
    """A file a store's write path keeps outside the object namespace (an
    upload in progress, a metadata record about to be renamed into place)
    and leaves behind when its writer is killed.

    ``path`` is where the store keeps it, relative to its root (say
    ``.offload-tmp/9f...``); ``modified`` is when it last changed, in
    seconds since the epoch by the store's clock. ``held`` says a live
    writer still owns it (it is never removed, however old);
    ``owner_dead`` that the run which made it has provably ended (it may
    be removed at once). When neither is known, only its age tells.
    """

    path: str
    size: int
    modified: float
    held: bool = False
    owner_dead: bool = False


class Entry(NamedTuple):
    """One log entry: its ledger, its id within the ledger, its bytes.

    A named tuple rather than a dataclass because readers build one per
    entry on their hottest loop, and a tuple is the cheapest immutable
    object Python can make (a frozen dataclass costs three
    ``object.__setattr__`` calls)."""

    ledger_id: int
    entry_id: int
    data: bytes


@dataclass(frozen=True, order=True)
class Position:
    """Where an entry is in a managed ledger: ``ledger_id:entry_id``.

    Positions order by ledger, then entry."""

    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"

    @classmethod
    def parse(cls, text: str) -> Position:
        """``"12:345"`` -> ``Position(12, 345)``; :class:`ConfigError` for
        anything else."""
        ledger, sep, entry = text.partition(":")
        try:
            if not sep:
                raise ValueError(text)
            position = cls(int(ledger), int(entry))
        except ValueError:
            raise ConfigError(f"position {text!r} is not LEDGER:ENTRY (two integers, e.g. 12:0)") from None
        if position.ledger_id < 0 or position.entry_id < 0:
            raise ConfigError(f"position {text!r} has a negative part")
        return position
