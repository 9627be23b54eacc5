"""``spark.read.format("pulsar-offload")``: offloaded ledgers as a DataFrame,
straight from object storage, with no broker.

Planning happens on the Spark driver: the store is listed, every complete
offloaded ledger's index is read, and its blocks are grouped into
partitions (``blocksPerPartition``, default 4). A partition is small and
picklable (URL, driver options, key, byte ranges). Each task opens its own
storage driver in ``read()`` and decodes its blocks strictly.

Options: ``path`` (store URL, required), ``ledgers`` (comma-separated ids
to read; default all), ``blocksPerPartition``, and ``driver.<name>`` for
storage-driver options (``driver.region``, ``driver.endpoint`` ...).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from ..errors import ConfigError, FormatError
from ..formats import pulsar_v1 as v1
from ..offload.inventory import find_offloaded_ledgers
from ..plugins import open_driver

__all__ = ["BlockRangePartition", "PulsarOffloadDataSource", "plan_partitions"]

SCHEMA = StructType(
    [
        StructField("ledger_id", LongType(), nullable=False),
        StructField("entry_id", LongType(), nullable=False),
        StructField("payload", BinaryType(), nullable=False),
    ]
)


@dataclass(frozen=True)
class BlockRangePartition(InputPartition):
    """Consecutive blocks of one ledger's data object."""

    url: str
    driver_options: tuple[tuple[str, str], ...]
    ledger_id: int
    data_key: str
    blocks: tuple[tuple[int, int, int], ...]  # (offset, end, first entry id)


def _driver_options(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted((name[len("driver.") :], value) for name, value in options.items() if name.startswith("driver."))
    )


def plan_partitions(options: Mapping[str, str]) -> list[BlockRangePartition]:
    """The partitions for reading the store named by ``options["path"]``.

    Raises :class:`ConfigError` for a missing path or a bad option."""
    url = options.get("path")
    if not url:
        raise ConfigError('pulsar-offload needs a store URL: .option("path", "s3://bucket/prefix") or .load(URL)')
    try:
        per_partition = int(options.get("blocksPerPartition", "4"))
        wanted = {int(part) for part in options["ledgers"].split(",")} if options.get("ledgers") else None
    except ValueError as exc:
        raise ConfigError(f"pulsar-offload: bad option ({exc}); ledgers is a comma-separated list of ids") from exc
    if per_partition < 1:
        raise ConfigError("pulsar-offload: blocksPerPartition must be at least 1")
    driver_options = _driver_options(options)
    open_options: dict[str, Any] = dict(driver_options)
    driver = open_driver(url, **open_options)
    partitions: list[BlockRangePartition] = []
    for ledger in find_offloaded_ledgers(driver):
        if not ledger.complete or (wanted is not None and ledger.ledger_id not in wanted):
            continue
        index = v1.decode_index(driver.read(ledger.index_key))
        blocks = [(entry.offset, index.block_end(entry), entry.first_entry_id) for entry in index.entries]
        for first in range(0, len(blocks), per_partition):
            partitions.append(
                BlockRangePartition(url, driver_options, ledger.ledger_id, ledger.data_key,
                                    tuple(blocks[first : first + per_partition]))
            )  # fmt: skip
    return partitions


class PulsarOffloadReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]) -> None:
        self.options = dict(options)

    def partitions(self) -> list[BlockRangePartition]:
        return plan_partitions(self.options)

    def read(self, partition: InputPartition) -> Iterator[tuple[int, int, bytes]]:
        if not isinstance(partition, BlockRangePartition):
            raise TypeError(f"pulsar-offload cannot read a {type(partition).__name__}")
        options: dict[str, Any] = dict(partition.driver_options)
        driver = open_driver(partition.url, **options)
        try:
            for offset, end, first_entry_id in partition.blocks:
                block = v1.decode_block(driver.read(partition.data_key, offset, end))
                if block.header.first_entry_id != first_entry_id:
                    raise FormatError(
                        f"{partition.data_key} at byte {offset}: block starts at entry "
                        f"{block.header.first_entry_id}, its index says {first_entry_id}"
                    )
                for entry_id, payload in block.entries:
                    yield (partition.ledger_id, entry_id, payload)
        finally:
            driver.close()


class PulsarOffloadDataSource(DataSource):
    """Registered as ``pulsar-offload``: ``spark.dataSource.register(PulsarOffloadDataSource)``."""

    @classmethod
    def name(cls) -> str:
        return "pulsar-offload"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: Any) -> PulsarOffloadReader:
        return PulsarOffloadReader(self.options)
