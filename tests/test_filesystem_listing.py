"""The filesystem driver's listing: sorted by key across directories, as
the driver contract requires (planning pairs objects by that order), and
streamed, holding a directory's names rather than its scan entries."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from offload_driver_filesystem import FilesystemDriver, sorted_names

from offload_core.errors import OffloadError


def test_listing_streams_in_key_order_across_directories(tmp_path: Path) -> None:
    driver = FilesystemDriver(str(tmp_path))
    keys = ["a/x", "a-b", "a.c", "a/b/c", "a0", "b", "a/b-"]
    for key in keys:
        driver.write(key, b"1")
    listing = driver.list("")
    assert not isinstance(listing, list)
    assert [info.key for info in listing] == sorted(keys)
    assert [info.key for info in driver.list("a/b")] == ["a/b-", "a/b/c"]


def test_listing_a_large_directory_holds_its_names_not_its_entries(tmp_path: Path) -> None:
    """A flat store of many objects is one directory: while it is listed,
    its names are held (a scan's entries, each with the stat it cached,
    were ten times that: 900 bytes an object)."""
    count = 3000
    sizes = {f"object-{number:05d}": number % 13 for number in range(count)}
    for name, size in sizes.items():
        (tmp_path / name).write_bytes(b"x" * size)  # an object is its file, as the driver leaves it
    driver = FilesystemDriver(str(tmp_path))
    listed = {}
    tracemalloc.start()
    try:
        for info in driver.list(""):
            listed[info.key] = info.size
            if len(listed) == 1:
                tracemalloc.reset_peak()  # from the first record on: the scan's names are all held
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert listed == sizes
    name = sys.getsizeof(next(iter(sizes)))
    assert peak / count < 2 * name + 64  # the listed dict's own key and entry, and the scan's name


def test_an_object_deleted_while_its_directory_is_listed_is_left_out(tmp_path: Path) -> None:
    """A listing racing a delete (a retention run beside a Spark task's
    probe) gives the keys still there, not the operating system's error."""
    driver = FilesystemDriver(str(tmp_path))
    for key in ("a", "b", "c"):
        driver.write(key, b"1")
    listing = driver.list("")
    assert next(listing).key == "a"  # the directory's names are read: "b" goes after the scan
    driver.delete("b")
    assert [info.key for info in listing] == ["c"]


def test_a_prefix_listing_holds_only_the_names_it_lists(tmp_path: Path) -> None:
    """Reading one ledger of a flat store lists its key as a prefix: the
    directory's other names are left before they are sorted, not held."""
    count = 3000
    for number in range(count):
        (tmp_path / f"object-{number:05d}").write_bytes(b"x")
    driver = FilesystemDriver(str(tmp_path))
    tracemalloc.start()
    try:
        listed = [info.key for info in driver.list("object-01234")]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert listed == ["object-01234"]
    assert peak < count * sys.getsizeof("object-01234") / 10


@pytest.mark.parametrize("run", [sorted_names.RUN, 2], ids=["one run", "merged runs"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.sets(st.text("ab/-", min_size=1, max_size=5).filter(lambda k: "//" not in k and k[0] != "/"
                                                                   and k[-1] != "/"), max_size=12),  # fmt: skip
       prefix=st.text("ab/-", max_size=4))  # fmt: skip
def test_a_prefix_lists_what_filtering_the_whole_listing_gives(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, keys: set[str], prefix: str, run: int
) -> None:
    monkeypatch.setattr(sorted_names, "RUN", run)
    driver = FilesystemDriver(str(tmp_path_factory.mktemp("store")))
    written = set()
    for key in keys:
        try:
            driver.write(key, b"1")
            written.add(key)
        except OffloadError:
            pass  # a key that is another's directory ("a" beside "a/b"): a directory store cannot hold both
    if prefix.startswith("/") or "//" in prefix:
        return
    assert [info.key for info in driver.list(prefix)] == sorted(k for k in written if k.startswith(prefix))
