"""Export runs that fail: a crash at each step re-runs to every record
once with the failed run's files gone; a killed run's files are swept by
a later run; of two concurrent runs one commits and the other stops;
bad input is one clear error with nothing committed. Faults are injected
with mocks; everything else is real."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitStateUnknownException
from pyspark.sql.classic.dataframe import DataFrame

from offload_core.errors import ConfigError, ConflictError, FormatError, NotFoundError
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark.export import export_kafka, export_pulsar, jobs, runs
from tests.rsm.segments import numbered_segments, write_partition
from tests.spark.iceberg_helpers import file_catalog, load, read_back
from tests.spark.pulsar_topics import ENTRIES, append_and_offload

pytestmark = pytest.mark.spark

TABLE = "kafka.clicks"


@pytest.fixture
def store(tmp_path: Path) -> str:
    """Topic clicks, partition 0: offsets 0..199 in two tiered segments."""
    url = f"file://{tmp_path / 'store'}"
    tp, segments = read_partition_dir(write_partition(tmp_path / "kafka", "clicks-0", numbered_segments(3)))
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    for segment in segments[:2]:
        rsm.copy_log_segment(tp, segment.data)
    return url


def export(spark: Any, url: str, root: Path, **kwargs: Any) -> Any:
    return export_kafka(spark, url, "clicks", TABLE, options={"prefix": "tiered"}, catalog=file_catalog(root),
                        **kwargs)  # fmt: skip


def offsets(root: Path) -> list[int]:
    return sorted(read_back(file_catalog(root), TABLE)["offset"].to_pylist())


def leftovers(root: Path) -> list[Path]:
    """Files of export runs under the table that no snapshot names, and run markers."""
    table = load(file_catalog(root), TABLE)
    named = {f.file.file_path.removeprefix("file://") for f in table.scan().plan_files()}
    location = Path(table.location().removeprefix("file://"))
    files = [p for p in (location / "data").rglob("*.parquet") if str(p) not in named]
    return files + list((location / "offload-runs").glob("*"))


def crash(*_: Any, **__: Any) -> Any:
    raise RuntimeError("injected crash")


@pytest.mark.parametrize(
    "point",
    [
        mock.patch.object(DataFrame, "mapInArrow", crash),  # before any data file
        mock.patch.object(jobs.TaskResults, "of", crash),  # data files written, not committed
    ],
    ids=["before-data-files", "after-data-files"],
)
def test_a_crash_before_the_commit_leaves_nothing_and_the_rerun_exports_once(spark, store, tmp_path, point) -> None:
    with point, pytest.raises(RuntimeError, match="injected crash"):
        export(spark, store, tmp_path)
    assert load(file_catalog(tmp_path), TABLE).current_snapshot() is None
    assert leftovers(tmp_path) == []
    assert export(spark, store, tmp_path).rows_added == 200
    assert offsets(tmp_path) == list(range(200))


def test_a_crash_after_the_commit_keeps_the_snapshot_and_the_rerun_adds_nothing(spark, store, tmp_path) -> None:
    with mock.patch.object(runs, "_remove_run", side_effect=crash), pytest.raises(RuntimeError):
        export(spark, store, tmp_path)  # committed; its clean-up (marker, spare files) crashed
    assert offsets(tmp_path) == list(range(200))
    again = export(spark, store, tmp_path)
    assert (again.rows_added, again.snapshot_id, len(again.swept_runs)) == (0, None, 1)
    assert leftovers(tmp_path) == []
    assert offsets(tmp_path) == list(range(200))


def test_a_killed_runs_files_are_swept_once_stale(spark, store, tmp_path) -> None:
    with (mock.patch.object(runs, "_remove_run"), mock.patch.object(jobs.TaskResults, "of", crash),
          pytest.raises(RuntimeError)):  # fmt: skip
        export(spark, store, tmp_path)  # as if killed: nothing removed
    left = leftovers(tmp_path)
    assert any(p.suffix == ".parquet" for p in left) and any(p.suffix == ".json" for p in left)
    young = export(spark, store, tmp_path)  # a young marker may be a live run elsewhere: left alone
    assert young.swept_runs == [] and young.rows_added == 200 and len(leftovers(tmp_path)) == len(left)
    tier_third_segment(tmp_path, store)
    later = export(spark, store, tmp_path, stale_after=0)
    assert len(later.swept_runs) == 1 and later.rows_added == 100 and leftovers(tmp_path) == []
    assert offsets(tmp_path) == list(range(300))


def tier_third_segment(root: Path, url: str) -> None:
    tp, segments = read_partition_dir(root / "kafka" / "clicks-0")
    RemoteStorageManager(open_driver(url), prefix="tiered").copy_log_segment(tp, segments[2].data)


def test_of_two_concurrent_runs_one_commits_and_the_other_stops(spark, store, tmp_path) -> None:
    real = runs.Run._commit
    winners = []

    def racing(self: Any, results: Any, marks: Any) -> int:
        # Another export of the same table commits while this one is between its data files and its commit.
        with mock.patch.object(runs.Run, "_commit", real):
            winners.append(export(spark, store, tmp_path))
        return real(self, results, marks)

    lost = f"another writer committed to {TABLE} while this export ran"
    with mock.patch.object(runs.Run, "_commit", racing), pytest.raises(ConflictError, match=lost):
        export(spark, store, tmp_path)
    assert winners[0].rows_added == 200
    assert leftovers(tmp_path) == [] and offsets(tmp_path) == list(range(200))


def test_nothing_tiered_is_an_error_and_commits_nothing(spark, store, tmp_path) -> None:
    with pytest.raises(NotFoundError, match="Kafka topic views under .* has nothing tiered"):
        export_kafka(spark, store, "views", TABLE, options={"prefix": "tiered"}, catalog=file_catalog(tmp_path))
    assert load(file_catalog(tmp_path), TABLE).current_snapshot() is None


def test_another_schema_is_refused(spark, store, tmp_path) -> None:
    data = tmp_path / "data"
    append_and_offload(data, "public/default/events", ENTRIES[:45], streaming=False)
    export_pulsar(spark, data, "public/default/events", TABLE, catalog=file_catalog(tmp_path))
    with pytest.raises(ConfigError, match=f"table {TABLE} exists with another schema .* export to a new --table"):
        export(spark, store, tmp_path)
    assert load(file_catalog(tmp_path), TABLE).properties["offload.source"] == "pulsar-offload"


@pytest.mark.parametrize("catalog", [{"type": "rest", "uri": "http://127.0.0.1:9"},
                                     {"type": "sql", "uri": "sqlite:////nonexistent-dir/catalog.db"}])  # fmt: skip
def test_an_unreachable_catalog_is_a_clear_error(spark, store, catalog) -> None:
    with pytest.raises(ConfigError, match="the Iceberg catalog at .* cannot be reached"):
        export_kafka(spark, store, "clicks", TABLE, options={"prefix": "tiered"}, catalog=catalog)


def test_a_damaged_object_fails_the_run_naming_it(spark, store, tmp_path) -> None:
    (log,) = sorted((tmp_path / "store" / "tiered").glob("*/*.log"))[1:]
    damaged = bytearray(log.read_bytes())
    damaged[200] ^= 0xFF  # inside the first batch's records: its CRC no longer matches
    log.write_bytes(bytes(damaged))
    key = str(log.relative_to(tmp_path / "store"))
    with pytest.raises(FormatError, match="damaged source object") as failed:
        export(spark, store, tmp_path)
    assert f"{key}: remote batch at byte 0 (offset 100) fails its CRC-32C" in str(failed.value)
    assert "nothing was committed" in str(failed.value)
    assert load(file_catalog(tmp_path), TABLE).current_snapshot() is None and leftovers(tmp_path) == []


def expire_the_exports_snapshots(root: Path) -> None:
    """Another writer commits an empty snapshot and the older ones are expired."""
    table = load(file_catalog(root), TABLE)
    exported = [snapshot.snapshot_id for snapshot in table.snapshots()]
    with table.transaction() as transaction:
        transaction.update_snapshot().fast_append().commit()
    table = load(file_catalog(root), TABLE)
    for snapshot_id in exported:
        table.maintenance.expire_snapshots().by_id(snapshot_id).commit()
    table = load(file_catalog(root), TABLE)
    assert all("offload.watermarks" not in (s.summary.additional_properties if s.summary else {})
               for s in table.snapshots())  # fmt: skip


def test_watermarks_outlive_the_snapshots_that_recorded_them(spark, store, tmp_path) -> None:
    assert export(spark, store, tmp_path).rows_added == 200
    expire_the_exports_snapshots(tmp_path)
    again = export(spark, store, tmp_path)
    assert (again.rows_added, again.snapshot_id) == (0, None)
    assert offsets(tmp_path) == list(range(200))
    tier_third_segment(tmp_path, store)
    assert export(spark, store, tmp_path).rows_added == 100
    assert offsets(tmp_path) == list(range(300))


def test_the_sweep_keeps_the_files_a_live_snapshot_names(spark, store, tmp_path) -> None:
    with mock.patch.object(runs, "_remove_run", side_effect=crash), pytest.raises(RuntimeError):
        export(spark, store, tmp_path)  # killed after its commit, before it removed its marker
    expire_the_exports_snapshots(tmp_path)  # now no snapshot names the run
    again = export(spark, store, tmp_path, stale_after=0)
    assert (again.rows_added, len(again.swept_runs)) == (0, 1)
    assert leftovers(tmp_path) == []
    assert offsets(tmp_path) == list(range(200))


@pytest.mark.parametrize("went_through", [True, False], ids=["committed", "not-committed"])
def test_a_commit_of_unknown_state_keeps_the_runs_files_and_the_rerun_settles_it(
    spark, store, tmp_path, went_through
) -> None:
    real = SqlCatalog.commit_table

    def unknown(self: Any, *args: Any, **kwargs: Any) -> Any:
        # As a REST catalog's 502: the client cannot tell whether the commit went through.
        if went_through:
            real(self, *args, **kwargs)
        raise CommitStateUnknownException("502 Bad Gateway")

    with (mock.patch.object(SqlCatalog, "commit_table", unknown),
          pytest.raises(ConflictError, match="the state of the commit .* is unknown")):  # fmt: skip
        export(spark, store, tmp_path)
    left = leftovers(tmp_path)
    assert any(p.suffix == ".json" for p in left)  # the marker stays for a later run's sweep
    if went_through:
        assert offsets(tmp_path) == list(range(200))
    again = export(spark, store, tmp_path, stale_after=0)
    assert (again.rows_added, len(again.swept_runs)) == (0 if went_through else 200, 1)
    assert leftovers(tmp_path) == [] and offsets(tmp_path) == list(range(200))
