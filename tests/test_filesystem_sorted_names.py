"""The filesystem driver's sort of a directory's names: the order
``sorted`` gives, whether the names fit one run or are merged from many,
any text a file name can be (names the operating system could not decode
included), held at a fraction of the names' size; and the driver's
listing of a directory merged from several runs."""

from __future__ import annotations

import sys
import tracemalloc
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offload_driver_filesystem import FilesystemDriver, sorted_names

# Any text but NUL, lone surrogates included (what surrogateescape makes of bytes that are not UTF-8).
_NAMES = st.text(st.characters(exclude_characters="\0", codec=None, exclude_categories=()), min_size=1)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(_NAMES, max_size=40), run=st.integers(1, 6))
def test_names_come_out_as_sorted_gives_them(names: list[str], run: int) -> None:
    assert list(sorted_names.sorted_names(names, run)) == sorted(names)


def test_names_not_utf8_and_long_ones_keep_their_order() -> None:
    names = ["b\udcff", "a\udc80z", "é" * 5000, "a", "\udcfe", "zz" * 3000] * 3
    assert list(sorted_names.sorted_names(names, 2)) == sorted(names)


def test_the_input_is_read_before_the_first_name_is_asked_for() -> None:
    """The driver closes a directory's scan as soon as this returns."""
    taken: list[str] = []

    def names() -> object:
        for number in range(10):
            taken.append(str(number))
            yield str(number)

    ordered = sorted_names.sorted_names(names(), 3)  # type: ignore[arg-type]
    assert len(taken) == 10
    assert list(ordered) == [str(number) for number in range(10)]


def test_many_names_are_held_at_a_fraction_of_their_size() -> None:
    """Names of a flat store with random uuids (a broker's ledger keys),
    each made as it is read, as a directory's scan makes them: a sorted
    list of them is about 110 bytes a name, held until the last is listed."""
    uuids = [uuid.uuid4() for _ in range(5 * 4096 + 10)]
    tracemalloc.start()
    try:
        ordered = sorted_names.sorted_names((f"{made}-ledger-{number}" for number, made in enumerate(uuids)), 4096)
        first = next(ordered)
        tracemalloc.reset_peak()  # from the first name on: the rest are all held
        rest = sum(1 for _ in ordered)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first == min(f"{made}-ledger-{number}" for number, made in enumerate(uuids))
    assert rest == len(uuids) - 1
    assert peak / len(uuids) < sys.getsizeof(first) / 2


def test_a_directory_merged_from_several_runs_lists_in_key_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sorted_names, "RUN", 16)  # 300 files: 18 runs and a last short one
    sizes = {f"{uuid.uuid4()}-ledger-{number}": number % 7 for number in range(300)}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(b"x" * size)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a").write_bytes(b"")
    sizes["sub/a"] = 0
    driver = FilesystemDriver(str(tmp_path))
    assert [(info.key, info.size) for info in driver.list("")] == sorted(sizes.items())
    wanted = sorted(key for key in sizes if key.startswith("a"))
    assert [info.key for info in driver.list("a")] == wanted
