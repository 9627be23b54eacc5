"""What a read's plan takes of a listing of MapFile directories
(``complete_mapfile_sizes``): the complete directories, with their sizes,
each given as the sorted listing passes its ``index``, holding only the
directories the listing is in (nested ones too: a managed ledger's name
may run on inside another's ledger directory)."""

from __future__ import annotations

import gc
import tracemalloc
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_core.errors import StateError
from offload_core.model import ObjectInfo
from offload_core.offload.mapfile.mapfile_inventory import complete_mapfile_sizes, group_mapfiles

_NAMES = ("data", "index", ".data.crc", ".index.crc")
_UIDS = [str(uuid.UUID(int=n * 0x1234567 + 1)) for n in range(8)]


def _files(prefix: str, managed_ledger: str, ledger_id: int, uid: str, names: tuple[str, ...]) -> list[ObjectInfo]:
    return [ObjectInfo(f"{prefix}{managed_ledger}/{ledger_id}-{uid}/{name}", len(name) * 3) for name in names]


def _expected(listing: list[ObjectInfo], prefix: str) -> list[tuple[int, str, str, int]]:
    """``group_mapfiles``' complete directories, with the bytes of their files, in their keys' order."""
    complete = sorted((ledger for ledger in group_mapfiles(listing, prefix) if ledger.complete),
                      key=lambda ledger: ledger.index_key)  # fmt: skip
    return [(ledger.ledger_id, ledger.managed_ledger, ledger.uuid, sum(info.size for info in ledger.files))
            for ledger in complete]  # fmt: skip


def test_complete_directories_come_in_the_listings_order_with_their_sizes() -> None:
    uids = _UIDS
    listing = [
        *_files("p/", "t/ns/b", 10, uids[0], _NAMES),
        *_files("p/", "t/ns/b", 9, uids[1], ("data", "index")),
        *_files("p/", "t/ns/a", 10, uids[2], ("data", "index")),
        *_files("p/", "t/ns/a", 10, uids[3].upper(), ("data", "index")),  # as listed: upper case kept
        *_files("p/", "t/ns/a", 10, uids[3], ("data", "index")),
        *_files("p/", "t/ns/ü", 2, uids[4], ("data",)),  # no index: not complete
        *_files("p/", "t/ns/a", 3, uids[5], ("index", ".index.crc")),  # no data
        *_files("p/", "x/ns/c", 2**63 - 1, uids[4], ("data", "index")),
        *_files("p/", "x/ns/c", 2**63, uids[4], ("data", "index")),  # no int64 ledger id: not a ledger
        ObjectInfo("p/t/ns/a/4-not-a-uuid/data", 1),
        ObjectInfo("p/t/ns/a/other", 1),
    ]
    listing.sort(key=lambda info: info.key)
    expected = _expected(listing, "p/")
    assert list(complete_mapfile_sizes(listing, "p/")) == expected
    # By managed ledger, then the ledger id's digits as text (10 before 9), as a store lists the keys.
    assert [row[:2] for row in expected] == [(10, "t/ns/a"), (10, "t/ns/a"), (10, "t/ns/a"), (10, "t/ns/b"),
                                             (9, "t/ns/b"), (2**63 - 1, "x/ns/c")]  # fmt: skip
    assert expected[3][3] == sum(len(name) * 3 for name in _NAMES)  # the .crc files counted


def test_directories_nested_in_another_by_a_managed_ledger_name_are_summed_apart() -> None:
    """A nested directory's files are listed among its parent's: before
    its ``data``, between ``data`` and ``index``, after ``index``, and
    nested again."""
    u = _UIDS
    outer, incomplete = f"t/7-{u[0]}", f"t/8-{u[6]}"
    listing = [
        *_files("", "t", 7, u[0], _NAMES),
        *_files("", f"{outer}/a", 1, u[1], ("data", "index")),  # before the outer data
        *_files("", f"{outer}/e", 2, u[2], _NAMES),  # between the outer data and index
        *_files("", f"{outer}/e/2-{u[2]}/b", 3, u[3], ("data", "index")),  # inside that one, before its data
        *_files("", f"{outer}/e/2-{u[2]}/x", 4, u[3], ("data", "index")),  # inside it, after its index
        *_files("", f"{outer}/c", 5, u[5], ("data",)),  # nested, not complete
        *_files("", f"{outer}/z", 6, u[4], ("data", "index")),  # after the outer index
        *_files("", "t", 8, u[6], ("data", ".data.crc")),  # not complete, a complete one nested in it
        *_files("", f"{incomplete}/f", 9, u[7], ("data", "index")),
    ]
    listing.sort(key=lambda info: info.key)
    expected = _expected(listing, "")
    assert sorted(row[0] for row in expected) == [1, 2, 3, 4, 6, 7, 9]
    assert list(complete_mapfile_sizes(listing, "")) == expected


_SEGMENTS = (".a", "a", "d", "data", "e", "index", "j", "z")


@st.composite
def _nested_listings(draw: st.DrawFn) -> list[ObjectInfo]:
    """MapFile directories whose managed ledgers' names may run on inside
    the directories drawn before them, files of each drawn at random."""
    directories: list[str] = []
    sizes: dict[str, int] = {}
    for _ in range(draw(st.integers(1, 10))):
        parent = draw(st.sampled_from(["", *directories]))
        segment = draw(st.sampled_from(_SEGMENTS))
        directory = f"{parent}/{segment}" if parent else segment
        directory += f"/{draw(st.integers(0, 12))}-{draw(st.sampled_from(_UIDS[:3]))}"
        directories.append(directory)
        for name in draw(st.sets(st.sampled_from(_NAMES))):
            sizes[f"{directory}/{name}"] = draw(st.integers(0, 99))
    return [ObjectInfo(key, size) for key, size in sorted(sizes.items())]


@settings(max_examples=300, deadline=None)
@given(listing=_nested_listings())
def test_any_nesting_gives_group_mapfiles_complete_directories(listing: list[ObjectInfo]) -> None:
    assert list(complete_mapfile_sizes(listing, "")) == _expected(listing, "")


def test_a_listing_out_of_key_order_is_refused_rather_than_a_directory_missed() -> None:
    listing = [*_files("", "t", 1, _UIDS[0], ("data", "index")), *_files("", "t", 2, _UIDS[1], ("data", "index"))]
    with pytest.raises(StateError, match=r"listed 't/2-.*/data' after 't/2-.*/index'.*fix the driver's list\(\)"):
        list(complete_mapfile_sizes(reversed(listing), ""))


def test_directories_are_let_go_as_the_listing_passes_them() -> None:
    """Only the directories the listing is in are held. Every directory
    was held until the listing ended (a dict of bytes keys and a sorted
    list, to give them in ledger-id order), some 240 bytes each, measured
    here on that code."""
    count = 5_000
    listing = [info for n in range(count) for info in _files("", "t/ns/topic", n, str(uuid.uuid4()), _NAMES)]
    listing.sort(key=lambda info: info.key)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        found = sum(1 for _ in complete_mapfile_sizes(iter(listing), ""))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == count
    assert (peak - before) / count < 2
