"""Cutting sealed entries into segments by binary search, and writing a
segment ticket from the hot-tier files (the steps of a Spark backfill)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from offload_core.managed_ledger import ReadPriority, write_segment
from offload_core.managed_ledger.streaming.segment_tickets import split_into_segments
from offload_core.model import Position
from tests.managed_ledger.conftest import FaultyStorePlugin

BLOCK = 4096


@given(st.lists(st.lists(st.integers(0, 5000), min_size=1, max_size=60), min_size=1, max_size=6),
       st.integers(BLOCK, 200_000))  # fmt: skip
def test_split_covers_every_entry_once_within_the_size(sizes: list[list[int]], segment_size: int) -> None:
    ledgers = [(ledger_id, 0, len(entry_sizes)) for ledger_id, entry_sizes in enumerate(sizes)]
    calls = []

    def payload_bytes(ledger_id: int, first: int, end: int) -> int:
        calls.append((ledger_id, first, end))
        return sum(sizes[ledger_id][first:end])

    segments = split_into_segments(ledgers, payload_bytes, segment_size=segment_size, block_size=BLOCK)
    covered = [(lid, e) for segment in segments for lid, first, last in segment for e in range(first, last + 1)]
    assert covered == [(lid, e) for lid, entry_sizes in enumerate(sizes) for e in range(len(entry_sizes))]
    for segment in segments:
        cost = sum(sum(sizes[lid][first : last + 1]) + 12 * (last - first + 1) + BLOCK for lid, first, last in segment)
        single = len(segment) == 1 and segment[0][1] == segment[0][2]
        assert cost <= segment_size or single  # only a lone entry may overflow a segment
    # A binary search, not a scan: a few probes per split, not one per entry.
    entries = sum(len(s) for s in sizes)
    assert len(calls) <= len(ledgers) + len(segments) * (2 + entries.bit_length() * 2)


def test_a_segment_ticket_is_written_then_completed(make_broker: Any, faulty: FaultyStorePlugin) -> None:
    broker = make_broker(managedLedgerOffloadDriver="faulty")
    ledger = broker.topic("acme/prod/backfill")
    for n in range(1250):
        ledger.append((f"{n}:".encode() * 700)[:2000])
    broker.policies.update("topic", "acme/prod/backfill", streaming_enabled=True, segment_max_size_mb=1)
    tickets = ledger.prepare_segment_tickets()
    assert len(tickets) == 3  # 12 sealed ledgers, about 2.4 MB, in segments of 1 MB
    assert [s.status for s in ledger.segments()] == ["assigned"] * 3
    runs = [(run.ledger_id, run.first_entry_id, run.last_entry_id) for t in tickets for run in t.runs]
    sealed = [s for s in ledger.ledgers() if s.sealed]
    assert [e for lid, first, last in runs for e in [(lid, x) for x in range(first, last + 1)]] == [
        (s.ledger_id, x) for s in sealed for x in range(s.entries)
    ]
    plugins = broker.plugins
    first, *rest = tickets
    result = write_segment(first, plugins)
    ledger.complete_segment_ticket(first, {r.ledger_id: r.last_entry_id for r in result.ledgers})
    for ticket in rest:
        ledger.abandon_segment_ticket(ticket)  # as the job does when a task failed
    assert [s.status for s in ledger.segments()] == ["complete"]
    offloaded = [s.ledger_id for s in ledger.ledgers() if s.tier != "hot"]
    assert offloaded and offloaded == [s.ledger_id for s in sealed[: len(offloaded)]]
    entries = ledger.read(Position(sealed[0].ledger_id, 0), 10**6, priority=ReadPriority.OFFLOADED_FIRST)
    assert [e.data for e in entries] == [(f"{n}:".encode() * 700)[:2000] for n in range(1250)]
    # The rest streams as usual afterwards, from where the completed segment ended.
    assert ledger.complete_current_segment().status == "success"
    assert {s.status for s in ledger.segments()} == {"complete"}
    assert all(s.tier != "hot" for s in ledger.ledgers() if s.sealed)
