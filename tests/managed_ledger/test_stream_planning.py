"""The size of the streaming pump's runs: about a megabyte of entries,
never so many small ones that one run holds the ledger's lock long, and
never none."""

from __future__ import annotations

import pytest

from offload_core.managed_ledger.streaming.stream_planning import run_entries


@pytest.mark.parametrize(
    ("average_size", "entries"),
    [(1000, 1048), (16 << 10, 64), (1 << 20, 1), (10, 2048), (0, 2048), (64 << 20, 1)],
)
def test_a_run_is_about_a_megabyte_of_entries_within_its_bounds(average_size: int, entries: int) -> None:
    assert run_entries(average_size) == entries
