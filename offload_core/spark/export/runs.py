"""One export run: data files written by Spark's tasks into the run's own
directory, committed by the driver in one Iceberg snapshot, or removed.

A run is named by a uuid. Before its tasks start it writes a marker,
``<table>/offload-runs/<run id>.json``, and its tasks write under
``<table>/data/offload-run-<run id>/``. Whatever fails in the run, its
directory and marker are removed before the error goes on (once the
snapshot is committed, only the files it does not name). A run killed
outright leaves both: a later run removes them once a snapshot names the
run or the marker is older than ``stale_after`` seconds (a younger marker
may be a run still writing, on this table, from elsewhere), but never a
file some snapshot of the table names.

The commit is optimistic: it holds only if the table is still at the
snapshot the run planned from. pyiceberg's own commit retries (which would
put this run's rows on top of what a concurrent export committed: twice)
are switched off for it; a lost race removes this run's files and raises
:class:`ConflictError`. A commit whose outcome the catalog leaves unknown
(a REST catalog's 5xx, say: it may have gone through) removes nothing: the
files and the marker stay for a later run's sweep, which keeps whatever
the table names, and the next run starts from the watermarks the table
then holds, so a re-run adds each row once either way."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyarrow.fs import FileSelector, FileType
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import Table, TableProperties

from ...errors import ConfigError, ConflictError, FormatError, OffloadError, mask_secret_text
from .data_files import TaskResults
from .tables import TableKind
from .watermarks import WATERMARKS, Watermarks, committed_run_ids, merged, summary, table_record

__all__ = ["Run", "RunOutcome", "export_records", "sweep_abandoned_runs"]

_RUNS = "offload-runs"
_ERROR_LINE = re.compile(r"^(?:offload_core\.errors\.)?(FormatError|LostEntriesError|NotFoundError): (.+)$", re.M)


def export_records(table: Table) -> list[dict[str, str]]:
    """Where the table's exports got, newest first: the table's properties
    when they keep the watermarks (every export commit sets them, and they
    outlive expired snapshots), then the snapshot summaries along the main
    branch's ancestry (all a table exported before they were kept has)."""
    properties = table.metadata.properties
    found = [table_record(properties)] if WATERMARKS in properties else []
    snapshot = table.current_snapshot()
    while snapshot is not None:
        found.append(dict(snapshot.summary.additional_properties) if snapshot.summary else {})
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None
    return found


def _run_dir(table: Table, run_id: str) -> str:
    return f"{table.location().rstrip('/')}/data/offload-run-{run_id}"


def _marker(table: Table, run_id: str) -> str:
    return f"{table.location().rstrip('/')}/{_RUNS}/{run_id}.json"


def _filesystem(io: FileIO, location: str) -> tuple[Any, str, str]:
    """pyarrow's filesystem for ``location``, its path there and its scheme."""
    if not isinstance(io, PyArrowFileIO):
        raise ConfigError(
            f"the export lists and removes its runs' files through pyiceberg's PyArrowFileIO, and the catalog "
            f"gives {type(io).__name__}: drop the py-io-impl catalog property"
        )
    scheme, netloc, path = io.parse_location(location)
    return io.fs_by_scheme(scheme, netloc), path, scheme


def _files_under(io: FileIO, location: str) -> list[str]:
    fs, path, scheme = _filesystem(io, location)
    infos = fs.get_file_info(FileSelector(path, recursive=True, allow_not_found=True))
    return [f"{scheme}://{info.path}" for info in infos if info.type == FileType.File]


def _remove(io: FileIO, locations: list[str]) -> None:
    for location in locations:
        io.delete(location)


def _live_files(table: Table) -> set[str]:
    """The data files some snapshot of the table names (without ``file://``)."""
    manifests = {manifest.manifest_path: manifest for snapshot in table.snapshots()
                 for manifest in snapshot.manifests(table.io)}  # fmt: skip
    return {_plain(entry.data_file.file_path) for manifest in manifests.values()
            for entry in manifest.fetch_manifest_entry(table.io)}  # fmt: skip


def _plain(location: str) -> str:
    return location.removeprefix("file://")


def _remove_run(table: Table, run_id: str, keep: set[str]) -> int:
    """Remove run ``run_id``'s files but those in ``keep``, then its marker; how many files went."""
    kept = {_plain(location) for location in keep}
    files = [f for f in _files_under(table.io, _run_dir(table, run_id)) if _plain(f) not in kept]
    _remove(table.io, files)
    _remove(table.io, [_marker(table, run_id)])
    return len(files)


def sweep_abandoned_runs(table: Table, *, stale_after: float, now: float | None = None) -> list[str]:
    """Remove what killed runs left: the files and marker of a run a
    snapshot names, and of one whose marker is older than ``stale_after``
    seconds; of either, never a file some snapshot of the table names (a run
    killed after its commit, whose snapshot was then expired, has its files
    in the table still). The ids of the runs swept."""
    moment = time.time() if now is None else now
    committed = committed_run_ids(export_records(table))
    fs, path, _scheme = _filesystem(table.io, f"{table.location().rstrip('/')}/{_RUNS}")
    swept = []
    for info in fs.get_file_info(FileSelector(path, allow_not_found=True)):
        if info.type != FileType.File or not info.base_name.endswith(".json"):
            continue
        run_id = info.base_name.removesuffix(".json")
        stale = info.mtime is not None and moment - info.mtime.timestamp() >= stale_after
        if run_id in committed or stale:
            swept.append(run_id)
    if swept:
        live = _live_files(table)
        for run_id in swept:
            _remove_run(table, run_id, live)
    return swept


@dataclass(frozen=True)
class RunOutcome:
    rows: int
    data_files: int
    snapshot_id: int | None
    watermarks: Watermarks


class Run:
    """One run on ``table``; :meth:`execute` does all of it. Its snapshot's
    summary carries ``summary`` beside the watermarks; its commit also sets
    the watermarks, topic ids and replaced topic ids as table properties
    (:func:`.watermarks.table_record`)."""

    def __init__(
        self,
        table: Table,
        kind: TableKind,
        table_name: str,
        *,
        summary: Mapping[str, str] | None = None,
    ) -> None:
        self.table = table
        self.kind = kind
        self.table_name = table_name
        self.summary = dict(summary or {})
        self.run_id = str(uuid.uuid4())
        self.base_snapshot = table.current_snapshot()

    def writer_metadata(self) -> Any:
        """The table's metadata with the data path in this run's directory."""
        properties = {
            **self.table.metadata.properties,
            TableProperties.WRITE_DATA_PATH: _run_dir(self.table, self.run_id),
            TableProperties.OBJECT_STORE_ENABLED: "false",
        }
        return self.table.metadata.model_copy(update={"properties": properties})

    def execute(self, write: Callable[[], TaskResults], previous: Watermarks) -> RunOutcome:
        """Write (``write`` runs the Spark job), then commit; on any failure
        remove this run's files. Raises :class:`FormatError` naming a damaged
        source object, :class:`ConflictError` when another export committed
        first (its files removed) and when the catalog failed to say whether
        the commit went through (its files and marker kept), and what else
        the job raised."""
        output = self.table.io.new_output(_marker(self.table, self.run_id))
        with output.create(overwrite=True) as stream:
            stream.write(json.dumps({"run_id": self.run_id, "started": time.time()}).encode())
        committed = False
        in_doubt = False  # the commit may have gone through: only a later sweep may remove files
        try:
            try:
                results = write()
            except OffloadError:
                raise
            except Exception as exc:
                raise _job_error(exc) from None
            if not results.data_files:
                _remove_run(self.table, self.run_id, set())
                return RunOutcome(0, 0, None, {})
            marks = merged(previous, results.watermarks)
            try:
                snapshot_id = self._commit(results, marks)
            except ConflictError:
                raise
            except BaseException as exc:
                in_doubt = True
                if isinstance(exc, Exception):
                    raise self._unknown(exc) from None
                raise
            committed = True
            _remove_run(self.table, self.run_id, {f.file_path for f in results.data_files})
            return RunOutcome(results.rows, len(results.data_files), snapshot_id, marks)
        except BaseException:
            if not committed and not in_doubt:
                _remove_run(self.table, self.run_id, set())
            raise

    def _unknown(self, exc: Exception) -> ConflictError:
        detail = mask_secret_text(f"{type(exc).__name__}: {exc}")
        return ConflictError(
            f"the state of the commit of export run {self.run_id} to {self.table_name} is unknown ({detail}): it may "
            "have gone through; its files and marker are kept: run the export again, it goes on from what the "
            "table holds (adding no row twice) and removes the run's files the table does not name"
        )

    def _commit(self, results: TaskResults, marks: Watermarks) -> int:
        # A copy of the table whose commit does not retry: see the module's docstring.
        metadata = self.table.metadata.model_copy(
            update={"properties": {**self.table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}}
        )
        guarded = Table(self.table.name(), metadata, self.table.metadata_location, self.table.io, self.table.catalog)
        properties = dict(self.summary) | summary(self.run_id, self.kind.source, marks, results.rows)
        transaction = guarded.transaction()
        transaction.set_properties(table_record(properties))
        with transaction.update_snapshot(snapshot_properties=properties).fast_append() as append:
            for data_file in results.data_files:
                append.append_data_file(data_file)
        try:
            committed = transaction.commit_transaction()
        except CommitFailedException as exc:
            base = self.base_snapshot.snapshot_id if self.base_snapshot is not None else "none"
            raise ConflictError(
                f"another writer committed to {self.table_name} while this export ran (it planned from snapshot "
                f"{base}: {exc}); this run committed nothing and removes its files: run the export again to "
                "export what was tiered since the other one"
            ) from None
        snapshot = committed.current_snapshot()
        assert snapshot is not None
        return snapshot.snapshot_id


def _job_error(exc: Exception) -> Exception:
    """A failed Spark job as our error when a task failed on a damaged
    source object (the task's message names it), else as it came."""
    found = _ERROR_LINE.findall(str(exc))
    if not found:
        return exc
    kind, message = found[-1]
    text = mask_secret_text(f"the export read a damaged source object ({kind}: {message}); nothing was committed")
    return FormatError(text)
