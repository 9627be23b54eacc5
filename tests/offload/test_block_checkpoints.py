"""Positions a walking reader remembers: nearest known entry, bounded."""

from __future__ import annotations

from offload_core.formats.pulsar_v1 import IndexEntry
from offload_core.offload.reading.block_checkpoints import BlockCheckpoints

BLOCK = IndexEntry(first_entry_id=100, part_id=2, offset=4096)
OTHER = IndexEntry(first_entry_id=200, part_id=3, offset=8192)


def test_the_nearest_known_entry_is_found_per_block() -> None:
    known = BlockCheckpoints()
    assert known.nearest(BLOCK, 150) == (100, 4096 + 128)  # the block's first entry, before learning anything
    known.add(BLOCK, 120, 6000)
    known.add(BLOCK, 140, 7000)
    known.add(OTHER, 210, 9000)
    assert known.nearest(BLOCK, 139) == (120, 6000)
    assert known.nearest(BLOCK, 140) == (140, 7000)
    assert known.nearest(BLOCK, 199) == (140, 7000)
    assert known.nearest(OTHER, 205) == (200, 8192 + 128)


def test_past_the_limit_everything_is_forgotten() -> None:
    known = BlockCheckpoints(limit=3)
    for entry_id in (110, 120, 130):
        known.add(BLOCK, entry_id, entry_id * 10)
    assert known.nearest(BLOCK, 135) == (130, 1300)
    known.add(BLOCK, 140, 1400)  # the fourth: the first three are dropped
    assert known.nearest(BLOCK, 135) == (100, 4096 + 128)
    assert known.nearest(BLOCK, 145) == (140, 1400)
