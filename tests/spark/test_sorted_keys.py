"""The listing planning keeps (``SortedKeys``, under ``ListedOnce``):
keys held in deflated blocks, found again by prefix exactly as a list
bisected by prefix finds them, any text a driver lists included (names
the operating system could not decode), a listing out of key order
refused rather than served wrongly."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_core.errors import InvalidKeyError, StateError
from offload_core.memory import MemoryDriver
from offload_core.model import ObjectInfo
from offload_core.plugins import open_driver
from offload_core.spark import sorted_keys
from offload_core.spark.planning_reads import ListedOnce
from offload_core.spark.sorted_keys import SortedKeys

# Any text but NUL, lone surrogates included (what surrogateescape makes of bytes that are not UTF-8).
_TEXT = st.text(st.characters(exclude_characters="\0", codec=None, exclude_categories=()), max_size=6)


def _held(keys: list[str], block: int) -> SortedKeys:
    held = SortedKeys(block)
    for key in keys:
        held.append(key)
    return held


@settings(max_examples=300, deadline=None)
@given(keys=st.lists(_TEXT, max_size=40), block=st.integers(1, 5), asked=st.lists(_TEXT, max_size=4))
def test_keys_starting_with_a_prefix_come_with_their_numbers_as_from_a_list(
    keys: list[str], block: int, asked: list[str]
) -> None:
    keys.sort()  # duplicates kept: a listing's are its own affair
    held = _held(keys, block)
    assert len(held) == len(keys)
    for prefix in ["", *asked, *(key[:cut] for key in keys[::3] for cut in (len(key) // 2, len(key)))]:
        assert list(held.starting_with(prefix)) == [(n, key) for n, key in enumerate(keys) if key.startswith(prefix)]


def test_a_key_out_of_order_is_refused_even_across_a_block() -> None:
    held = _held(["a", "b", "c"], 2)  # "c" starts the filling block, "a" and "b" are deflated
    with pytest.raises(StateError, match=r"listed 'b0' after 'c'.*fix the driver's list\(\)"):
        held.append("b0")
    held = _held(["a", "b"], 2)
    with pytest.raises(StateError, match="listed 'a' after 'b'"):
        held.append("a")


def test_a_key_holding_a_nul_is_refused_as_it_comes() -> None:
    with pytest.raises(InvalidKeyError, match=r"'a\\x00b', which holds a NUL byte"):
        SortedKeys().append("a\0b")


def test_listed_once_serves_file_names_that_are_not_utf8_as_the_driver_listed_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sorted_keys, "BLOCK", 2)  # most keys in deflated blocks
    root = os.fsencode(tmp_path)
    names = [
        b"a\xff",
        b"a\xfe/x",
        b"a-\xc3\xa9",
        b"b",
        b"b\xed\xa0\x80",
        b"d/\x80\x81",
        *(b"e%d" % n for n in range(7)),
    ]
    for name in names:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as out:
            out.write(name)
    driver = open_driver(f"file://{tmp_path}")
    listed: ListedOnce[None] = ListedOnce(driver)
    assert [info.key for info in listed.list("")] == [info.key for info in driver.list("")]  # the first listing
    assert len(list(driver.list(""))) == len(names)
    for prefix in ("", "a", "a-", "b", "d/", "e", "e6", "f"):
        assert list(listed.list(prefix)) == list(driver.list(prefix))
    assert "a\udcff" in [info.key for info in listed.list("a")]


class _ForeignNulKey(MemoryDriver):
    """A store that lists an object whose key holds a NUL (a foreign one,
    where a store allows it: our drivers never write one)."""

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        listed = [*super()._list(prefix), ObjectInfo("b\0c", 1)]
        return iter(sorted((info for info in listed if info.key.startswith(prefix)), key=lambda info: info.key))


def test_listed_once_passes_on_a_key_holding_a_nul_and_keeps_the_rest() -> None:
    store = _ForeignNulKey()
    for key in ("a", "b", "c"):
        store.write(key, [b"x"])
    listed: ListedOnce[None] = ListedOnce(store)
    assert [info.key for info in listed.list("")] == ["a", "b", "b\0c", "c"]  # the first listing: as the store's
    assert [info.key for info in listed.list("")] == ["a", "b", "c"]
    assert [info.key for info in listed.list("b")] == ["b"]
