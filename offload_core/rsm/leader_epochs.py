"""A segment's leader epochs, as a decoded manifest holds them. Pure.

A listing holds every manifest of a partition at once (one partition may
hold every segment of a store), and a segment's epochs as a ``dict`` cost
over 200 bytes where most segments have one epoch: held here as one flat
tuple, some 100."""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping
from itertools import chain

__all__ = ["LeaderEpochStarts"]


class LeaderEpochStarts(Mapping[int, int]):
    """Each leader epoch of a segment and its first offset there, in the
    order given; read-only, and equal to a mapping of the same items (a
    ``dict`` included). A missing epoch raises :class:`KeyError`."""

    __slots__ = ("_flat",)

    def __init__(self, starts: Mapping[int, int]) -> None:
        self._flat = tuple(chain.from_iterable(starts.items()))  # epoch, start, epoch, start, ...

    def __getitem__(self, epoch: int) -> int:
        flat = self._flat
        for at in range(0, len(flat), 2):
            if flat[at] == epoch:
                return flat[at + 1]
        raise KeyError(epoch)

    def __iter__(self) -> Iterator[int]:
        return iter(self._flat[::2])

    def __contains__(self, epoch: object) -> bool:
        return epoch in self._flat[::2]

    def items(self) -> ItemsView[int, int]:
        # The planning of a read walks every segment's epochs: in pairs, not a lookup an epoch.
        return _PairedItems(self)

    def __len__(self) -> int:
        return len(self._flat) // 2

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class _PairedItems(ItemsView[int, int]):
    _mapping: LeaderEpochStarts

    def __iter__(self) -> Iterator[tuple[int, int]]:
        flat = self._mapping._flat
        return zip(flat[::2], flat[1::2], strict=True)
