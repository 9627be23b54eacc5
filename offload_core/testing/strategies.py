"""Hypothesis strategies for offload-core's formats, for reuse by plugins."""

from __future__ import annotations

from hypothesis import strategies as st

from ..formats import pulsar_v1 as v1
from ..proto import LedgerMetadataFormat

__all__ = ["ledger_metadata", "v1_blocks", "v1_indexes"]

entry_ids = st.integers(min_value=0, max_value=2**63 - 1 - 1000)


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
def v1_indexes(draw: st.DrawFn) -> v1.Index:
    """Well-formed indexes: part ids from 1, increasing offsets and entries."""
    count = draw(st.integers(1, 6))
    firsts = sorted(draw(st.sets(st.integers(1, 2**40), min_size=count - 1, max_size=count - 1)) | {0})
    sizes = draw(st.lists(st.integers(v1.BLOCK_HEADER_LENGTH, 2**27), min_size=count, max_size=count))
    offsets = [sum(sizes[:n]) for n in range(count)]
    entries = tuple(
        v1.IndexEntry(first, n + 1, offset) for n, (first, offset) in enumerate(zip(firsts, offsets, strict=True))
    )
    metadata = draw(ledger_metadata(last_entry_id=firsts[-1] + draw(st.integers(0, 1000))))
    return v1.Index(data_object_length=sum(sizes), ledger_metadata=metadata.SerializeToString(), entries=entries)
