"""Listing a remote log without a metadata manager reads every manifest:
they are read a few at a time (against a remote store, one after another
costs a round trip each), and one deleted since the listing is left out."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from offload_core.errors import NotFoundError
from offload_core.model import ObjectInfo
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.rsm.aiven.listing import list_store
from offload_core.rsm.layout import MANIFEST_SUFFIX
from offload_core.rsm.remote_log import list_partition
from offload_core.rsm.types import TopicIdPartition
from offload_core.storage import StorageDriver
from offload_core.testing.faults import FaultyDriver
from tests.aiven_vectors import aiven_runs
from tests.rsm.aiven.stores import put_run
from tests.rsm.segments import numbered_segments, write_partition


class _FirstReadsMeet(FaultyDriver):
    """Reads of keys ending in ``suffix``: the first two wait for each
    other, so a listing that reads them one after another breaks the
    barrier (and fails) instead of finishing."""

    def __init__(self, inner: StorageDriver, suffix: str) -> None:
        super().__init__(inner, [])
        self._suffix = suffix
        self._meet = threading.Barrier(2, timeout=30)
        self._lock = threading.Lock()
        self._seen = 0

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        if key.endswith(self._suffix):
            with self._lock:
                self._seen += 1
                first_two = self._seen <= 2
            if first_two:
                self._meet.wait()
        return self.inner.read(key, start, end)


class _DeletesAfterListing(FaultyDriver):
    """Deletes ``key`` once a listing has passed it, as a retention run
    racing the reader would."""

    def __init__(self, inner: StorageDriver, key: str) -> None:
        super().__init__(inner, [])
        self._key = key

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        yield from self.inner.list(prefix)
        self.inner.delete([self._key])


def _our_store(tmp_path: Path) -> tuple[StorageDriver, TopicIdPartition]:
    rsm = RemoteStorageManager(open_driver(f"file://{tmp_path / 'store'}"), prefix="t")
    tp, segments = read_partition_dir(write_partition(tmp_path / "logs", "orders-0", numbered_segments(5)))
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    return rsm.driver, tp


def test_our_manifests_are_read_at_once(tmp_path: Path) -> None:
    driver, tp = _our_store(tmp_path)
    expected = [m.metadata for m in list_partition(driver, "t", tp).segments]
    assert len(expected) >= 3
    listing = list_partition(_FirstReadsMeet(driver, "." + MANIFEST_SUFFIX), "t", tp)
    assert [m.metadata for m in listing.segments] == expected


def test_our_manifest_deleted_since_the_listing_is_left_out(tmp_path: Path) -> None:
    driver, tp = _our_store(tmp_path)
    expected = [m.metadata for m in list_partition(driver, "t", tp).segments]
    manifests = [i.key for i in driver.list("t") if i.key.endswith(MANIFEST_SUFFIX)]
    second = next(key for key in manifests if expected[1].segment_id.id in key)
    listing = list_partition(_DeletesAfterListing(driver, second), "t", tp)
    assert [m.metadata for m in listing.segments] == expected[:1] + expected[2:]


def _aiven_store(tmp_path: Path) -> tuple[StorageDriver, list[str]]:
    driver = open_driver(f"file://{tmp_path / 'aiven'}")
    run = aiven_runs()[0]
    ids = [f"RetriedCopy{n}AAAAAAAAAA" for n in range(3)]
    keys = [put_run(driver, run, segment_id=segment_id, event_ms=1700000000000 + n).key
            for n, segment_id in enumerate(ids)]  # fmt: skip
    return driver, keys


def test_aivens_manifests_are_read_at_once(tmp_path: Path) -> None:
    driver, keys = _aiven_store(tmp_path)
    listing = list_store(_FirstReadsMeet(driver, ".rsm-manifest"))
    assert sorted(s.key.key for ss in listing.segments.values() for s in ss) == sorted(keys)


def test_aivens_manifest_deleted_since_the_listing_is_left_out(tmp_path: Path) -> None:
    driver, keys = _aiven_store(tmp_path)
    listing = list_store(_DeletesAfterListing(driver, keys[1]))
    assert sorted(s.key.key for ss in listing.segments.values() for s in ss) == sorted([keys[0], keys[2]])
    assert not listing.leftovers
    try:
        driver.read(keys[1])
    except NotFoundError:
        return
    raise AssertionError("the manifest was not deleted: the test proved nothing")


def test_a_name_with_digits_other_than_ascii_is_no_segment_of_the_listing() -> None:
    from offload_core.rsm.layout import parse_name

    # A key is made again from what parse_name read (as ASCII digits): a name it took with other digits
    # would be read under a key that is not there, and its segment left out as deleted since the listing.
    assert parse_name("0" * 20 + "-AAAAAAAAAAAAAAAAAAAAAA.manifest") is not None
    assert parse_name("\u0660" * 20 + "-AAAAAAAAAAAAAAAAAAAAAA.manifest") is None
