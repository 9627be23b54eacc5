"""Shared by the Iceberg export tests: catalogs on a directory and on moto's S3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_core.spark.export import default_catalog_properties
from tests.emulators import MotoS3


def file_catalog(root: Path) -> dict[str, str]:
    return default_catalog_properties(root)


def s3_catalog(root: Path, s3: MotoS3) -> dict[str, str]:
    """A SQLite catalog whose warehouse is in moto's bucket ``offload-test``."""
    root.mkdir(parents=True, exist_ok=True)
    return {"type": "sql", "uri": f"sqlite:///{root / 'catalog.db'}", "warehouse": "s3://offload-test/warehouse",
            "s3.endpoint": s3.endpoint, "s3.region": "us-east-1", "s3.access-key-id": "testing",
            "s3.secret-access-key": "testing"}  # fmt: skip


def read_back(catalog: dict[str, str], table: str) -> Any:
    """Every row of ``table`` through pyiceberg, as Arrow."""
    from pyiceberg.catalog import load_catalog

    return load_catalog("offload", **catalog).load_table(table).scan().to_arrow()


def load(catalog: dict[str, str], table: str) -> Any:
    from pyiceberg.catalog import load_catalog

    return load_catalog("offload", **catalog).load_table(table)
