"""Writing Iceberg data files in Spark's tasks (``mapInArrow``).

Each task cuts its rows by the table's partitions (day of the time column,
partition), writes one Parquet file per partition value and chunk of rows
through pyiceberg's writer (field ids, column statistics and partition
values as an Iceberg append records them) and hands back, per file, the
pickled ``DataFile``, and per topic partition the last position it wrote.
The partition values are computed here because pyiceberg's own Arrow
transforms need its optional Rust core."""

from __future__ import annotations

import pickle
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.io import load_file_io
from pyiceberg.io.pyarrow import pyarrow_to_schema, write_file
from pyiceberg.manifest import DataFile
from pyiceberg.partitioning import PartitionFieldValue, PartitionKey
from pyiceberg.table import WriteTask
from pyiceberg.table.metadata import TableMetadata

from .tables import TableKind
from .watermarks import Position, Watermarks

__all__ = ["RESULT_SCHEMA", "RunWriter", "TaskResults", "io_properties"]

#: What each task hands back: a data file, or a topic partition's last position.
RESULT_SCHEMA = "data_file binary, topic string, partition int, position array<bigint>"

_DAY_MICROS = 86_400_000_000.0
# Rows held before a task writes them out: bounds a task's memory.
_CHUNK_BYTES = 256 * 2**20


@dataclass(frozen=True)
class RunWriter:
    """The picklable writer one export run sends to Spark's tasks: the
    table's metadata with the data path pointing into the run's own
    directory, and the catalog properties the tasks open the warehouse with."""

    kind: TableKind
    metadata: TableMetadata
    io_properties: tuple[tuple[str, str], ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []
        size = 0
        marks: Watermarks = {}
        for batch in batches:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            size += batch.nbytes
            if size >= _CHUNK_BYTES:
                yield from self._flush(pending, marks)
                pending, size = [], 0
        if pending:
            yield from self._flush(pending, marks)
        if marks:
            keys = sorted(marks)
            yield pa.RecordBatch.from_pydict(
                {
                    "data_file": [None] * len(keys),
                    "topic": [topic for topic, _ in keys],
                    "partition": [partition for _, partition in keys],
                    "position": [list(marks[key]) for key in keys],
                },
                schema=_result_arrow_schema(),
            )

    def _flush(self, batches: list[pa.RecordBatch], marks: Watermarks) -> Iterator[pa.RecordBatch]:
        table = _in_utc(pa.Table.from_batches(batches))
        _advance(marks, table, self.kind.position_columns)
        files = self._write(table)
        yield pa.RecordBatch.from_pydict(
            {
                "data_file": [pickle.dumps(data_file) for data_file in files],
                "topic": [None] * len(files),
                "partition": [None] * len(files),
                "position": [None] * len(files),
            },
            schema=_result_arrow_schema(),
        )

    def _write(self, table: pa.Table) -> list[DataFile]:
        schema = self.metadata.schema()
        spec = self.metadata.spec()
        task_schema = pyarrow_to_schema(table.schema, name_mapping=schema.name_mapping,
                                        format_version=self.metadata.format_version)  # fmt: skip
        micros = table[self.kind.time_column].cast(pa.int64())
        days = pc.floor(pc.divide(micros.cast(pa.float64()), _DAY_MICROS)).cast(pa.int64())
        keyed = table.append_column("__day", days)
        write_uuid = uuid.uuid4()
        tasks = []
        for number, key in enumerate(keyed.group_by(["__day", "partition"]).aggregate([]).to_pylist()):
            day, partition = key["__day"], key["partition"]
            rows = table.filter(pc.and_(_matches(keyed["__day"], day), _matches(keyed["partition"], partition)))
            # The day transform's value goes in as the day ordinal: what pyiceberg records for it.
            values = [PartitionFieldValue(spec.fields[0], day), PartitionFieldValue(spec.fields[1], partition)]
            tasks.append(WriteTask(write_uuid, number, task_schema, rows.to_batches(),
                                   partition_key=PartitionKey(values, spec, schema)))  # fmt: skip
        io = load_file_io(dict(self.io_properties), self.metadata.location)
        return list(write_file(io, self.metadata, iter(tasks)))


def _in_utc(table: pa.Table) -> pa.Table:
    """``table`` with its times labelled UTC: Spark labels them with the
    session's time zone (the instants are the same), and Iceberg's
    timestamptz takes UTC only."""
    fields = [pa.field(f.name, pa.timestamp("us", tz="UTC"), f.nullable) if pa.types.is_timestamp(f.type) else f
              for f in table.schema]  # fmt: skip
    return table.cast(pa.schema(fields))


def _matches(column: Any, value: Any) -> Any:
    return pc.is_null(column) if value is None else pc.fill_null(pc.equal(column, value), False)


def _advance(marks: Watermarks, table: pa.Table, position_columns: tuple[str, ...]) -> None:
    """Move each topic partition's mark to the last position in ``table``."""
    columns = [table[name].to_pylist() for name in ("topic", "partition", *position_columns)]
    for topic, partition, *position in zip(*columns, strict=True):
        key = (topic, partition)
        current = tuple(position)
        if current > marks.get(key, ()):
            marks[key] = current


def _result_arrow_schema() -> pa.Schema:
    return pa.schema([("data_file", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
                      ("position", pa.list_(pa.int64()))])  # fmt: skip


@dataclass(frozen=True)
class TaskResults:
    """What the tasks of one run handed back, gathered on the driver."""

    data_files: list[DataFile]
    watermarks: Watermarks

    @property
    def rows(self) -> int:
        return sum(data_file.record_count for data_file in self.data_files)

    @classmethod
    def of(cls, rows: list[Any]) -> TaskResults:
        files: list[DataFile] = []
        marks: dict[tuple[str, int], Position] = {}
        for row in rows:
            if row.data_file is not None:
                files.append(pickle.loads(row.data_file))
                continue
            key = (row.topic, row.partition)
            marks[key] = max(tuple(row.position), marks.get(key, ()))
        return cls(files, marks)


def io_properties(properties: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """Catalog properties as the tasks take them (sorted pairs)."""
    return tuple(sorted(properties.items()))
