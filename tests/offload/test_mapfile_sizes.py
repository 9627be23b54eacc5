"""What a read's plan takes of a listing of MapFile directories
(``complete_mapfile_sizes``): the complete directories in
``group_mapfiles``'s order, each held compactly until the listing ends."""

from __future__ import annotations

import gc
import tracemalloc
import uuid

from offload_core.model import ObjectInfo
from offload_core.offload.mapfile.mapfile_inventory import complete_mapfile_sizes, group_mapfiles


def _files(prefix: str, managed_ledger: str, ledger_id: int, uid: str, names: tuple[str, ...]) -> list[ObjectInfo]:
    return [ObjectInfo(f"{prefix}{managed_ledger}/{ledger_id}-{uid}/{name}", len(name) * 3) for name in names]


def test_complete_directories_come_as_group_mapfiles_orders_them_with_their_sizes() -> None:
    uids = [str(uuid.UUID(int=n * 0x1234567 + 1)) for n in range(6)]
    listing = [
        *_files("p/", "t/ns/b", 10, uids[0], ("data", "index", ".data.crc", ".index.crc")),
        *_files("p/", "t/ns/b", 9, uids[1], ("data", "index")),
        *_files("p/", "t/ns/a", 10, uids[2], ("data", "index")),
        *_files("p/", "t/ns/a", 10, uids[3].upper(), ("data", "index")),  # as listed: upper case kept
        *_files("p/", "t/ns/a", 10, uids[3], ("data", "index")),
        *_files("p/", "t/ns/ü", 2, uids[4], ("data",)),  # no index: not complete
        *_files("p/", "t/ns/a", 3, uids[5], ("index", ".index.crc")),  # no data
        *_files("p/", "x/ns/c", 2**63 - 1, uids[4], ("data", "index")),
        ObjectInfo("p/t/ns/a/4-not-a-uuid/data", 1),
        ObjectInfo("p/t/ns/a/other", 1),
    ]
    listing.sort(key=lambda info: info.key)
    expected = [(ledger.ledger_id, ledger.managed_ledger, ledger.uuid, sum(info.size for info in ledger.files))
                for ledger in group_mapfiles(listing, "p/") if ledger.complete]  # fmt: skip
    assert list(complete_mapfile_sizes(listing, "p/")) == expected
    assert [row[:2] for row in expected] == [(9, "t/ns/b"), (10, "t/ns/a"), (10, "t/ns/a"), (10, "t/ns/a"),
                                             (10, "t/ns/b"), (2**63 - 1, "x/ns/c")]  # fmt: skip
    assert list(complete_mapfile_sizes(reversed(listing), "p/")) == expected  # any listing order


def test_a_directory_is_held_in_a_bytes_key_and_arrays_until_the_listing_ends() -> None:
    """Every directory is held until the listing ends (a later key may
    complete it, and the order is by ledger id, not the listing's). Each
    was a tuple key (its uuid a string of its own) and a list of two
    ints, and the complete ones were all returned as tuples: 360 bytes a
    directory at the peak before the first was given, measured here on
    that code; now 240."""
    count = 5_000
    listing = [info for n in range(count) for info in _files("", "t/ns/topic", n, str(uuid.uuid4()), ("data", "index"))]
    listing.sort(key=lambda info: info.key)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        sizes = complete_mapfile_sizes(iter(listing), "")
        first = next(iter(sizes))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first[:2] == (0, "t/ns/topic")
    assert (peak - before) / count < 300
