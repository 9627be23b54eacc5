"""Entry positions a reader of a block without entry offsets has learned
(the ones a walk passed and where each read stopped), per block, so the
next random read walks from the nearest one rather than the block start.
Bounded: past ``limit`` positions all are forgotten and learning starts over."""

from __future__ import annotations

import bisect

from .block_tables import BlockRow

__all__ = ["BlockCheckpoints"]


class BlockCheckpoints:
    """Known ``entry id -> byte position`` pairs, per block. Not thread-safe
    (one per read handle, used under its caller's discipline)."""

    def __init__(self, limit: int = 65536) -> None:
        self._limit = limit
        self._count = 0
        self._blocks: dict[int, tuple[list[int], list[int]]] = {}

    def nearest(self, block: BlockRow, entry_id: int) -> tuple[int, int]:
        """The known entry of ``block`` closest before (or at) ``entry_id``,
        and its position: the block's first entry at worst."""
        ids, positions = self._blocks.get(block.part_id, ([block.first_entry_id], [block.data_offset]))
        nearest = bisect.bisect_right(ids, entry_id) - 1
        return ids[nearest], positions[nearest]

    def add(self, block: BlockRow, entry_id: int, position: int) -> None:
        """Remember that ``entry_id`` of ``block`` starts at ``position``."""
        if self._count >= self._limit:
            self.clear()
        ids, positions = self._blocks.setdefault(block.part_id, ([block.first_entry_id], [block.data_offset]))
        at = bisect.bisect_left(ids, entry_id)
        if at < len(ids) and ids[at] == entry_id:
            return
        ids.insert(at, entry_id)
        positions.insert(at, position)
        self._count += 1

    def clear(self) -> None:
        self._blocks.clear()
        self._count = 0
