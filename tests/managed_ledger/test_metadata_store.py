"""Compare-and-set metadata: conflicting writers raise, never overwrite."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from offload_core.errors import AlreadyExistsError, ConflictError, NotFoundError
from offload_core.managed_ledger.metadata_store import SqliteMetadataStore


def test_versions_advance_and_stale_writes_raise(tmp_path: Path) -> None:
    store = SqliteMetadataStore(tmp_path / "m.db")
    assert store.create("a/b", b"v0").version == 0
    assert store.set("a/b", b"v1", 0).version == 1
    with pytest.raises(ConflictError, match="version 1, not 0"):
        store.set("a/b", b"stale", 0)
    assert store.get("a/b") is not None and store.get("a/b").value == b"v1"  # type: ignore[union-attr]
    with pytest.raises(AlreadyExistsError):
        store.create("a/b", b"again")
    with pytest.raises(NotFoundError):
        store.set("missing", b"x", 0)


def test_two_writers_on_one_file(tmp_path: Path) -> None:
    first = SqliteMetadataStore(tmp_path / "m.db")
    second = SqliteMetadataStore(tmp_path / "m.db")
    first.create("record", b"start")
    seen_by_first = first.get("record")
    seen_by_second = second.get("record")
    assert seen_by_first is not None and seen_by_second is not None
    second.set("record", b"second wins", seen_by_second.version)
    with pytest.raises(ConflictError):
        first.set("record", b"first would overwrite", seen_by_first.version)
    assert first.get("record").value == b"second wins"  # type: ignore[union-attr]


def test_writers_in_two_processes(tmp_path: Path) -> None:
    store = SqliteMetadataStore(tmp_path / "m.db")
    store.create("counter", b"0")
    script = textwrap.dedent(
        """
        import sys
        from offload_core.errors import ConflictError
        from offload_core.managed_ledger.metadata_store import SqliteMetadataStore
        store = SqliteMetadataStore(sys.argv[1])
        done = conflicts = 0
        while done < 100:
            record = store.get("counter")
            try:
                store.set("counter", str(int(record.value) + 1).encode(), record.version)
                done += 1
            except ConflictError:
                conflicts += 1
        print(conflicts)
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "m.db")], stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    outputs = [proc.communicate()[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    # Every increment landed exactly once: no lost updates, whatever the interleaving.
    assert store.get("counter").value == b"200"  # type: ignore[union-attr]
    assert all(int(out) >= 0 for out in outputs)


def test_delete_with_version_and_children(tmp_path: Path) -> None:
    store = SqliteMetadataStore(tmp_path / "m.db")
    for path in ["x/1", "x/2", "y/1"]:
        store.create(path, b"")
    assert list(store.children("x/")) == ["x/1", "x/2"]
    with pytest.raises(ConflictError):
        store.delete("x/1", expected_version=3)
    store.delete("x/1", expected_version=0)
    store.delete("x/1")
    assert store.get("x/1") is None


def test_the_change_marker_moves_with_every_update_from_any_connection(tmp_path: Path) -> None:
    first = SqliteMetadataStore(tmp_path / "metadata.db")
    second = SqliteMetadataStore(tmp_path / "metadata.db")
    marker = first.change_marker()
    assert first.change_marker() == marker  # reading moves nothing
    first.get("a")
    assert first.change_marker() == marker
    first.create("a", b"1")
    assert first.change_marker() != marker
    marker = first.change_marker()
    second.set("a", b"2", 0)  # another connection (another process, in life)
    assert first.change_marker() != marker


def test_the_change_marker_of_an_area_moves_only_with_that_areas_records_or_another_connection(
    tmp_path: Path,
) -> None:
    first = SqliteMetadataStore(tmp_path / "metadata.db")
    second = SqliteMetadataStore(tmp_path / "metadata.db")
    marker = first.change_marker("policies")
    first.create("managed-ledgers/a", b"1")
    first.set("managed-ledgers/a", b"2", 0)
    assert first.change_marker("policies") == marker  # another area's updates leave it
    assert first.change_marker() != (marker[0], 0)  # the store-wide marker moved
    first.create("policies/topic/t", b"{}")
    assert first.change_marker("policies") != marker
    marker = first.change_marker("policies")
    second.set("managed-ledgers/a", b"3", 1)  # another connection: its area is not known here
    assert first.change_marker("policies") != marker


def test_a_failed_compare_and_set_changes_nothing(tmp_path: Path) -> None:
    store = SqliteMetadataStore(tmp_path / "m.db")
    store.create("a", b"v0")
    store.set("a", b"v1", 0)
    with pytest.raises(ConflictError, match="version 1, not 5"):
        store.set("a", b"never", 5)
    with pytest.raises(NotFoundError, match="'b' does not exist"):
        store.set("b", b"never", 0)
    assert store.get("a") == store.get("a") and store.get("a").value == b"v1"  # type: ignore[union-attr]
    assert store.get("a").version == 1  # type: ignore[union-attr]
    assert store.get("b") is None
