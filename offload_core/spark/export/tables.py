"""The Iceberg side of the export: the catalog, and the two tables' schemas,
partition specs and properties.

Every field is optional (Spark's Arrow columns are nullable); the tables are
partitioned by day of the record's time and by partition."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import Table
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import (
    BinaryType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

from ...errors import ConfigError, OffloadError
from ...urls import redact_url_text

__all__ = [
    "KAFKA",
    "PULSAR",
    "TableKind",
    "default_catalog_properties",
    "open_catalog",
    "open_table",
    "table_properties",
    "unreachable",
]

CATALOG_NAME = "offload"


@dataclass(frozen=True)
class TableKind:
    """What one source's table looks like: its schema, the column its day
    partition comes from, and the columns that say how far an export got
    (compared in order)."""

    source: str
    schema: Schema
    time_column: str
    position_columns: tuple[str, ...]

    @property
    def spec(self) -> PartitionSpec:
        time_id = self.schema.find_field(self.time_column).field_id
        partition_id = self.schema.find_field("partition").field_id
        return PartitionSpec(
            PartitionField(time_id, 1000, DayTransform(), f"{self.time_column}_day"),
            PartitionField(partition_id, 1001, IdentityTransform(), "partition"),
        )


PULSAR = TableKind(
    "pulsar-offload",
    Schema(
        NestedField(1, "topic", StringType()),
        NestedField(2, "partition", IntegerType()),
        NestedField(3, "ledger_id", LongType()),
        NestedField(4, "entry_id", LongType()),
        NestedField(5, "batch_index", IntegerType()),
        NestedField(6, "payload", BinaryType()),
        NestedField(7, "publish_time", TimestamptzType()),
        NestedField(8, "event_time", TimestamptzType()),
        NestedField(9, "key", StringType()),
        NestedField(10, "properties", MapType(13, StringType(), 14, StringType(), value_required=False)),
        NestedField(11, "producer_name", StringType()),
        NestedField(12, "sequence_id", LongType()),
    ),
    "publish_time",
    ("ledger_id", "entry_id"),
)

#: Spark's Kafka source schema (with headers), as an Iceberg schema.
KAFKA = TableKind(
    "kafka-remote",
    Schema(
        NestedField(1, "key", BinaryType()),
        NestedField(2, "value", BinaryType()),
        NestedField(3, "topic", StringType()),
        NestedField(4, "partition", IntegerType()),
        NestedField(5, "offset", LongType()),
        NestedField(6, "timestamp", TimestamptzType()),
        NestedField(7, "timestampType", IntegerType()),
        NestedField(
            8,
            "headers",
            ListType(
                9,
                StructType(NestedField(10, "key", StringType()), NestedField(11, "value", BinaryType())),
                element_required=False,
            ),
        ),
    ),
    "timestamp",
    ("offset",),
)


def default_catalog_properties(data_dir: str | Path) -> dict[str, str]:
    """The embedded default: a SQL catalog on SQLite at
    ``DIR/iceberg/catalog.db``, its warehouse at ``DIR/iceberg/warehouse``
    (both directories created here)."""
    root = Path(data_dir).resolve() / "iceberg"
    (root / "warehouse").mkdir(parents=True, exist_ok=True)
    return {"type": "sql", "uri": f"sqlite:///{root / 'catalog.db'}", "warehouse": (root / "warehouse").as_uri()}


def open_catalog(properties: Mapping[str, str]) -> Catalog:
    """The catalog ``properties`` name (pyiceberg's catalog properties).
    A default SQLite catalog's directories are created first.

    Raises :class:`ConfigError` naming the catalog when it cannot be
    opened or reached."""
    try:
        return load_catalog(CATALOG_NAME, **properties)
    except Exception as exc:
        raise unreachable(properties, exc) from None


def unreachable(properties: Mapping[str, str], exc: BaseException) -> ConfigError:
    """The error for a catalog that did not answer (secrets masked)."""
    where = redact_url_text(properties.get("uri", "(no uri)"))
    return ConfigError(
        f"the Iceberg catalog at {where} cannot be reached ({type(exc).__name__}: {redact_url_text(str(exc))}); "
        "check the --catalog properties (uri, warehouse, credentials) and that the catalog is up"
    )


def open_table(
    catalog: Catalog,
    properties: Mapping[str, str],
    name: str,
    kind: TableKind,
    origin: Mapping[str, str],
) -> Table:
    """Table ``name`` (``NAMESPACE.TABLE``), created with ``kind``'s schema,
    partition spec and ``origin`` as its properties if it does not exist.

    Raises :class:`ConfigError` for a bad name, for an existing table whose
    schema or partition spec is not ``kind``'s (the export never changes a
    table's schema), and for a catalog that cannot be reached."""
    namespace, _, table_name = name.rpartition(".")
    if not namespace or not table_name:
        raise ConfigError(f"--table {name!r} is not NAMESPACE.TABLE (e.g. offload.orders)")
    try:
        try:
            table = catalog.load_table(name)
        except NoSuchTableError:
            catalog.create_namespace_if_not_exists(namespace)
            return catalog.create_table_if_not_exists(
                name, kind.schema, partition_spec=kind.spec, properties=dict(origin)
            )
    except OffloadError:
        raise
    except Exception as exc:
        raise unreachable(properties, exc) from None
    _check_shape(table, name, kind)
    return table


def _check_shape(table: Table, name: str, kind: TableKind) -> None:
    found = _shape(table.schema())
    wanted = _shape(kind.schema)
    if found != wanted:
        missing = [column for column in wanted if column not in found]
        other = [column for column in found if column not in wanted]
        raise ConfigError(
            f"table {name} exists with another schema than a {kind.source} export writes (missing or changed: "
            f"{', '.join(missing) or 'none'}; not ours: {', '.join(other) or 'none'}); the export never changes a "
            "table's schema: export to a new --table"
        )
    if [(f.source_id, str(f.transform)) for f in table.spec().fields] != [
        (f.source_id, str(f.transform)) for f in kind.spec.fields
    ]:
        raise ConfigError(
            f"table {name} is partitioned by {table.spec()}, not as a {kind.source} export writes "
            f"({kind.spec}); export to a new --table"
        )


def _shape(schema: Schema) -> list[str]:
    """Each top-level column as ``name:id:type``: what data files must agree on."""
    return [f"{field.name}:{field.field_id}:{field.field_type}" for field in schema.fields]


def table_properties(kind: TableKind, **where: Any) -> dict[str, str]:
    """The table properties saying where the data came from."""
    return {"offload.source": kind.source, **{f"offload.{key}": str(value) for key, value in where.items()}}
