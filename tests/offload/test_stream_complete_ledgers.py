"""Complete whole-ledger offloads found in a sorted listing as it comes
(``stream_complete_ledgers``): the same copies the grouping finds, with
only the data objects still waiting for their index held."""

from __future__ import annotations

import tracemalloc
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import StateError
from offload_core.formats import pulsar_v1 as v1
from offload_core.model import ObjectInfo
from offload_core.offload.ledgers.inventory import group_ledgers, stream_complete_ledgers

_UUIDS = [str(uuid.UUID(int=n * 7919 + 1)) for n in range(4)]
# Prefixes that nest one ledger's keys inside another's name, and sort between a data key and its index.
_PREFIXES = ["", "a/", f"{v1.data_key(_UUIDS[0], 1)}-a/", f"{v1.data_key(_UUIDS[0], 1)} ", "z"]

_objects = st.lists(
    st.tuples(st.sampled_from(_PREFIXES), st.sampled_from(_UUIDS), st.integers(0, 12), st.booleans()),
    max_size=40,
)


def _listing(objects: list[tuple[str, str, int, bool]], junk: list[str]) -> list[ObjectInfo]:
    keys = {prefix + (v1.index_key if index else v1.data_key)(uid, ledger) for prefix, uid, ledger, index in objects}
    return [ObjectInfo(key, len(key)) for key in sorted(keys | set(junk))]


@given(_objects, st.lists(st.text(max_size=30), max_size=5))
def test_the_stream_finds_what_grouping_finds(objects: list[tuple[str, str, int, bool]], junk: list[str]) -> None:
    listing = _listing(objects, junk)
    found = list(stream_complete_ledgers(iter(listing)))
    expected = [ledger for ledger in group_ledgers(listing) if ledger.complete]
    key = lambda copy: copy.data_key  # noqa: E731
    assert sorted((c.data_key, c.ledger_id, c.uuid, c.prefix) for c in found) == sorted(
        (e.data_key, e.ledger_id, e.uuid, e.prefix) for e in expected
    )
    sizes = {info.key: info.size for info in listing}
    assert all(copy.size == sizes[copy.data_key] for copy in sorted(found, key=key))


def test_data_objects_never_indexed_are_let_go() -> None:
    listing = [ObjectInfo(v1.data_key(str(uuid.UUID(int=n + 1)), n), 1) for n in range(5_000)]
    complete = str(uuid.UUID(int=10**9))
    listing += [ObjectInfo(v1.data_key(complete, 1), 1), ObjectInfo(v1.index_key(complete, 1), 1)]
    listing.sort(key=lambda info: info.key)
    tracemalloc.start()
    try:
        found = list(stream_complete_ledgers(listing))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [copy.uuid for copy in found] == [complete]
    # One abandoned data object waits at a time: holding all 5,000 would take over 300 KB.
    assert peak < 20_000


def test_an_unsorted_listing_is_refused() -> None:
    uid = _UUIDS[0]
    listing = [ObjectInfo(v1.index_key(uid, 2), 1), ObjectInfo(v1.data_key(uid, 2), 1)]
    with pytest.raises(StateError, match="listing sorted by key, which every storage driver must give"):
        list(stream_complete_ledgers(listing))
