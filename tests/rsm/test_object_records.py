"""Versioned records as objects in a store: compare-and-set from
create-if-absent, with a writer holding a removed generation refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.errors import AlreadyExistsError, ConflictError, NotFoundError
from offload_core.plugins import open_driver
from offload_core.rsm import copy_lease
from offload_core.rsm.object_records import ObjectRecordStore
from offload_core.storage import StorageDriver
from tests.emulators import MotoS3


def test_records_change_only_from_the_version_read(tmp_path: Path) -> None:
    with open_driver(f"file://{tmp_path}") as driver:
        _records_change_only_from_the_version_read(driver)


@pytest.mark.emulator
def test_records_change_only_from_the_version_read_on_s3(s3: MotoS3) -> None:
    with open_driver("s3://offload-test", **s3.client_options()) as driver:
        _records_change_only_from_the_version_read(driver)


def _records_change_only_from_the_version_read(driver: StorageDriver) -> None:
    store = ObjectRecordStore(driver)
    assert store.get("p/r") is None
    assert store.create("p/r", b"a").version == 0
    with pytest.raises(AlreadyExistsError):
        store.create("p/r", b"b")
    assert store.set("p/r", b"b", 0).version == 1
    with pytest.raises(ConflictError):
        store.set("p/r", b"c", 0)
    with pytest.raises(ConflictError):
        store.delete("p/r", 0)
    assert store.get("p/r") is not None and store.get("p/r").value == b"b"  # type: ignore[union-attr]
    assert list(store.children("p/")) == ["p/r"]
    store.delete("p/r", 1)
    assert store.get("p/r") is None and list(store.children("p/")) == []
    with pytest.raises(NotFoundError):
        store.set("p/r", b"c", 1)
    assert store.create("p/r", b"again").version == 0
    assert len(list(driver.list("p/r/"))) == 1  # older generations are removed
    read = store._current("p/r")  # two writers read the same generation; the second to create the next loses
    assert read is not None
    store.set("p/r", b"first", 0)
    with pytest.raises(ConflictError):
        store._advance("p/r", read[0], b"+1\nsecond")
    assert store.get("p/r").value == b"first"  # type: ignore[union-attr]


def test_a_writer_holding_a_removed_generation_loses(tmp_path: Path) -> None:
    with open_driver(f"file://{tmp_path}") as driver:
        store = ObjectRecordStore(driver)
        store.create("r", b"0")
        stale = store._current("r")  # what a slow writer read
        assert stale is not None
        store.set("r", b"1", 0)
        store.set("r", b"2", 1)  # generations 0 and 1 are removed now
        with pytest.raises(ConflictError):
            store._advance("r", stale[0], b"+1\nlate")  # creates generation 1 again, which no reader would see
        assert store.get("r").value == b"2"  # type: ignore[union-attr]
        assert [info.key for info in driver.list("r/")] == ["r/00000000000000000002"]


def test_the_copier_lease_works_on_object_records(tmp_path: Path) -> None:
    with open_driver(f"file://{tmp_path}") as driver:
        store = ObjectRecordStore(driver)
        copy_lease.take(store, "lease", "a", 1, "p-0")
        copy_lease.take(store, "lease", "a", 2, "p-0")
        with pytest.raises(ConflictError, match="another copy holds p-0"):
            copy_lease.take(store, "lease", "b", 3, "p-0")
        copy_lease.give_back(store, "lease", "a")
        copy_lease.take(store, "lease", "b", 4, "p-0")
