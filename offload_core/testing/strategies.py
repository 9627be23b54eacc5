"""Hypothesis strategies for offload-core's formats, for reuse by plugins."""

from __future__ import annotations

import os

from hypothesis import strategies as st

from ..formats import kafka
from ..formats import pulsar_v1 as v1
from ..formats import pulsar_v2 as v2
from ..proto import LedgerMetadataFormat

__all__ = [
    "kafka_records",
    "ledger_metadata",
    "ledger_payloads",
    "segment_entries",
    "v1_blocks",
    "v1_indexes",
    "v2_indexes",
]

entry_ids = st.integers(min_value=0, max_value=2**63 - 1 - 1000)

#: The ``nightly`` Hypothesis profile draws ledgers of thousands of entries
#: with payloads of 64 KiB and more; the others keep examples small and fast.
NIGHTLY = os.environ.get("HYPOTHESIS_PROFILE") == "nightly"


def ledger_payloads(*, max_block_size: int) -> st.SearchStrategy[list[bytes]]:
    """A ledger's entries, every one small enough for a block of
    ``max_block_size``: many small ones, some empty, and (under the
    ``nightly`` profile) thousands of entries and payloads of 64 KiB or
    more, so that ledgers span many blocks."""
    largest = max_block_size - v1.BLOCK_HEADER_LENGTH - v1.ENTRY_HEADER_LENGTH
    small = st.binary(max_size=min(64, largest))
    sizes = [small, st.binary(max_size=min(2000, largest))]
    if NIGHTLY and largest >= 64 * 1024:
        sizes.append(st.integers(64 * 1024, largest).map(lambda n: bytes([n % 251]) * n))
    return st.lists(st.one_of(*sizes), min_size=1, max_size=5000 if NIGHTLY else 300)


@st.composite
def ledger_metadata(draw: st.DrawFn, *, last_entry_id: int | None = None) -> LedgerMetadataFormat:
    """Closed BookKeeper metadata: several segments, custom metadata in any order."""
    last = draw(st.integers(-1, 2**40)) if last_entry_id is None else last_entry_id
    ensemble = draw(st.integers(1, 5))
    metadata = LedgerMetadataFormat(
        quorumSize=draw(st.integers(1, ensemble)),
        ensembleSize=ensemble,
        ackQuorumSize=draw(st.integers(1, ensemble)),
        length=draw(st.integers(0, 2**50)),
        lastEntryId=last,
        state=LedgerMetadataFormat.CLOSED,
        digestType=draw(st.sampled_from([LedgerMetadataFormat.CRC32, LedgerMetadataFormat.CRC32C])),
        ctime=draw(st.integers(0, 2**45)),
    )
    firsts = sorted(draw(st.sets(st.integers(0, max(last, 0)), min_size=1, max_size=4)) | {0})
    for first in firsts:
        members = draw(
            st.lists(st.from_regex(r"10\.0\.0\.[0-9]{1,3}:3181", fullmatch=True), min_size=ensemble, max_size=ensemble)
        )
        metadata.segment.add(ensembleMember=members, firstEntryId=first)
    for key, value in draw(st.lists(st.tuples(st.text(max_size=12), st.binary(max_size=12)), max_size=4)):
        metadata.customMetadata.add(key=key, value=value)
    return metadata


@st.composite
def v1_blocks(draw: st.DrawFn) -> tuple[int, int, list[bytes]]:
    """``(first_entry_id, block_size, payloads)`` that fit: any padding length."""
    first = draw(entry_ids)
    payloads = draw(st.lists(st.binary(max_size=40), max_size=8))
    needed = v1.BLOCK_HEADER_LENGTH + sum(v1.ENTRY_HEADER_LENGTH + len(p) for p in payloads)
    return first, needed + draw(st.integers(0, 30)), payloads


@st.composite
def v1_indexes(draw: st.DrawFn, *, max_blocks: int = 6) -> v1.Index:
    """Well-formed indexes: part ids from 1, increasing offsets, first
    entry ids that never decrease (a block holding no entry repeats the
    next one's, as Pulsar writes when an entry is larger than a block)."""
    count = draw(st.integers(1, max_blocks))
    distinct = sorted(draw(st.sets(st.integers(1, 2**40), min_size=count - 1, max_size=count - 1)) | {0})
    firsts = [distinct[0]] + [distinct[n - 1] if draw(st.integers(0, 9)) == 0 else distinct[n] for n in range(1, count)]
    sizes = draw(st.lists(st.integers(v1.BLOCK_HEADER_LENGTH, 2**27), min_size=count, max_size=count))
    offsets = [sum(sizes[:n]) for n in range(count)]
    entries = tuple(
        v1.IndexEntry(first, n + 1, offset) for n, (first, offset) in enumerate(zip(firsts, offsets, strict=True))
    )
    metadata = draw(ledger_metadata(last_entry_id=firsts[-1] + draw(st.integers(0, 1000))))
    return v1.Index(data_object_length=sum(sizes), ledger_metadata=metadata.SerializeToString(), entries=entries)


@st.composite
def segment_entries(draw: st.DrawFn, *, max_ledgers: int = 4) -> list[tuple[int, int, bytes]]:
    """What a segment is offered: ``(ledger id, entry id, payload)`` for
    consecutive runs of consecutive entries of rising ledgers, the first
    run starting anywhere in its ledger."""
    ledgers = sorted(draw(st.sets(st.integers(0, 2**40), min_size=1, max_size=max_ledgers)))
    out: list[tuple[int, int, bytes]] = []
    for number, ledger_id in enumerate(ledgers):
        first = draw(st.integers(0, 2**40)) if number == 0 else 0
        payloads = draw(st.lists(st.binary(max_size=300), min_size=1, max_size=20))
        out.extend((ledger_id, first + n, payload) for n, payload in enumerate(payloads))
    return out


@st.composite
def v2_indexes(draw: st.DrawFn, *, max_ledgers: int = 4) -> v2.SegmentIndex:
    """Well-formed segment indexes: ledgers in any order, each with
    consecutive blocks of rising first entries, open or closed LedgerInfo."""
    ledgers = draw(st.lists(st.integers(0, 2**62), min_size=1, max_size=max_ledgers, unique=True))
    rows: list[tuple[int, v2.SegmentRow]] = []
    infos: dict[int, bytes] = {}
    offset, part = 0, 1
    for ledger_id in ledgers:
        first = draw(st.integers(0, 2**40))
        for _ in range(draw(st.integers(1, 4))):
            rows.append((ledger_id, v2.SegmentRow(first, part, offset)))
            offset += draw(st.integers(v2.BLOCK_HEADER_LENGTH, 2**26))
            first += draw(st.integers(1, 1000))
            part += 1
        closed = draw(st.booleans())
        infos[ledger_id] = v2.ledger_info_bytes(
            ledger_id,
            last_entry_id=first - 1,
            closed=closed,
            entries=first + draw(st.integers(0, 1000)),
            size=draw(st.integers(0, 2**40)),
            timestamp_ms=draw(st.integers(0, 2**42)),
        )
    order = draw(st.permutations(ledgers))
    by_ledger = {ledger_id: tuple(row for lid, row in rows if lid == ledger_id) for ledger_id in ledgers}
    return v2.SegmentIndex(
        data_object_length=offset,
        ledgers=tuple(v2.LedgerSection(ledger_id, infos[ledger_id], by_ledger[ledger_id]) for ledger_id in order),
    )


def kafka_records(*, base_offset: int = 0) -> st.SearchStrategy[list[kafka.Record]]:
    """Records of one Kafka batch: null and empty keys and values, headers
    with null values, repeated and non-ASCII header keys, offsets with gaps
    (a compacted batch) and timestamps in any order."""
    maybe_bytes = st.none() | st.binary(max_size=300)
    header = st.builds(kafka.Header, st.text(max_size=8), maybe_bytes)

    @st.composite
    def build(draw: st.DrawFn) -> list[kafka.Record]:
        count = draw(st.integers(1, 20))
        gaps = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
        first_ts = draw(st.integers(0, 2**41))
        records = []
        offset = base_offset
        for index, gap in enumerate(gaps):
            offset += gap if index else 0
            records.append(
                kafka.Record(
                    offset,
                    first_ts + draw(st.integers(-10_000, 10_000)),
                    draw(maybe_bytes),
                    draw(maybe_bytes),
                    tuple(draw(st.lists(header, max_size=3))),
                )  # fmt: skip
            )
            offset += 1
        return records

    return build()
