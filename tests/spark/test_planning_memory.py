"""What planning a read holds on the Spark driver (issue 42 item 5): the
listing as keys and sizes and a complete ledger copy as its data key, so
that planning a store of many objects holds little more than their keys
and the partitions it returns."""

from __future__ import annotations

import gc
import sys
import tracemalloc
import uuid

from offload_core.formats import pulsar_v1 as v1
from offload_core.memory import MemoryDriver
from offload_core.model import ObjectInfo
from offload_core.offload.ledgers.inventory import find_complete_ledgers, group_ledgers
from offload_core.spark.planning_reads import ListedOnce

OBJECTS = 2_000


def test_listed_once_serves_the_listing_it_holds_as_keys_and_sizes() -> None:
    store = MemoryDriver()
    for number in range(OBJECTS):
        store.write(f"ledgers/{number:05d}", [b"x" * (number % 7)])
    listed = ListedOnce(store)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        assert sum(1 for _ in listed.list("")) == OBJECTS  # the first listing is kept
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Each key, a reference to it and its size (8 bytes each): a kept record (its own object, a
    # metadata mapping and the mapping's proxy) was over 200 bytes more.
    keys = sum(sys.getsizeof(info.key) for info in store.list("")) / OBJECTS
    assert (held - before) / OBJECTS < keys + 32
    for prefix in ("", "ledgers/000", "ledgers/01999", "ledgers/1", "other"):
        assert list(listed.list(prefix)) == list(store.list(prefix))


def _listing(pairs: list[tuple[str, str, int, bool, bool]]) -> list[ObjectInfo]:
    keys = []
    for prefix, uid, ledger_id, data, index in pairs:
        if data:
            keys.append(prefix + v1.data_key(uid, ledger_id))
        if index:
            keys.append(prefix + v1.index_key(uid, ledger_id))
    return [ObjectInfo(key, 1) for key in sorted([*keys, "unrelated", "x/ledger-3"])]


def test_complete_ledgers_are_the_complete_groups_in_their_order() -> None:
    uids = sorted(str(uuid.UUID(int=n + 1)) for n in range(4))
    listing = _listing([
        ("", uids[0], 3, True, True),
        ("a/", uids[1], 3, True, True),  # a second copy of ledger 3 under a prefix
        ("", uids[2], 1, True, False),  # data without its index: an offload that never finished
        ("", uids[3], 1, False, True),
        ("", uids[1], 2, True, True),
        ("b/", uids[0], 10, True, True),
    ])  # fmt: skip
    found = find_complete_ledgers(iter(listing))  # one pass over the listing, as it comes
    expected = [ledger for ledger in group_ledgers(listing) if ledger.complete]
    assert [(c.prefix, c.uuid, c.ledger_id, c.data_key, c.index_key) for c in found] == [
        (e.prefix, e.uuid, e.ledger_id, e.data_key, e.index_key) for e in expected
    ]
    assert [c.ledger_id for c in found] == [2, 3, 3, 10]
