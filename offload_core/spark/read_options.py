"""The ``pulsar-offload`` source's options, parsed and checked (no Spark needed)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..errors import ConfigError
from ..read_transforms import with_read_transforms
from .store_urls import pinned_url

__all__ = [
    "DEFAULT_BYTES_PER_PARTITION",
    "OPEN_COST_BYTES",
    "Decode",
    "EntrySelection",
    "ReadOptions",
    "parse_read_options",
]


class Decode(Enum):
    """How entries become rows."""

    AUTO = "auto"  # Pulsar messages decoded, other entries as they are
    PULSAR = "pulsar"  # every entry must be a Pulsar message
    NONE = "none"  # one row per entry, message columns null


@dataclass(frozen=True)
class EntrySelection:
    """Which entries to read: whole ledgers and inclusive entry ranges.

    With neither, everything is read."""

    ledgers: frozenset[int] | None = None
    ranges: tuple[tuple[int, int, int | None], ...] = ()  # (ledger id, first, last or open)

    @property
    def everything(self) -> bool:
        return self.ledgers is None and not self.ranges

    def wants_ledger(self, ledger_id: int) -> bool:
        if self.everything or (self.ledgers is not None and ledger_id in self.ledgers):
            return True
        return any(ledger == ledger_id for ledger, _, _ in self.ranges)

    def entry_ranges(self, ledger_id: int) -> tuple[tuple[int, int | None], ...]:
        """The ranges to read of a wanted ledger; ``((0, None),)`` for all of it."""
        if self.everything or (self.ledgers is not None and ledger_id in self.ledgers):
            return ((0, None),)
        return tuple((first, last) for ledger, first, last in self.ranges if ledger == ledger_id)


DEFAULT_BYTES_PER_PARTITION = 128 * 2**20
"""Spark's own ``spark.sql.files.maxPartitionBytes``: a Python task costs
tens of milliseconds to start, so tasks of a few small blocks spend more
time starting than reading."""

OPEN_COST_BYTES = 4 * 2**20
"""What opening one more object costs a task, counted as that many bytes
more of it when small objects are packed into a partition (Spark's
``spark.sql.files.openCostInBytes``): a partition of tiny objects holds at
most ``bytesPerPartition // OPEN_COST_BYTES`` of them (31 by default)."""


@dataclass(frozen=True)
class ReadOptions:
    url: str
    selection: EntrySelection
    blocks_per_partition: int | None
    bytes_per_partition: int
    decode: Decode
    arrow: bool
    max_records_per_batch: int
    filter_pushdown: bool
    driver_options: tuple[tuple[str, str], ...]
    ledger_uuids: frozenset[tuple[int, str]] | None = None  # the v1 objects to read; None: every complete one
    fail_on_data_loss: bool = True  # an object deleted after planning fails the task; false: skipped, logged
    # Where planning adds the record of each object it left out (a stream's, for a task to count them).
    planning_skips: list[dict[str, Any]] | None = field(default=None, compare=False, repr=False)


def parse_read_options(options: Mapping[str, str]) -> ReadOptions:
    """Parse the reader's options. Raises :class:`ConfigError` naming the
    option and the expected form."""
    url = options.get("path")
    if not url:
        raise ConfigError('pulsar-offload needs a store URL: .option("path", "s3://bucket/prefix") or .load(URL)')
    decode_name = options.get("decode", "auto").lower()
    try:
        decode = Decode(decode_name)
    except ValueError:
        raise ConfigError(f"pulsar-offload: decode is auto, pulsar or none, not {decode_name!r}") from None
    return ReadOptions(
        url=pinned_url(url),
        selection=EntrySelection(_ledger_ids(options.get("ledgers")), _ranges(options.get("entries"))),
        blocks_per_partition=positive_option(options, "blocksPerPartition", 1)
        if "blocksPerPartition" in options
        else None,
        bytes_per_partition=positive_option(options, "bytesPerPartition", DEFAULT_BYTES_PER_PARTITION),
        decode=decode,
        arrow=_boolean(options, "arrow", True),
        max_records_per_batch=positive_option(options, "maxRecordsPerBatch", 10_000),
        filter_pushdown=_boolean(options, "filterPushdown", False),
        driver_options=source_driver_options(options),
        ledger_uuids=_ledger_uuids(options.get("ledgerUuids")),
        fail_on_data_loss=_boolean(options, "failOnDataLoss", True),
    )


def source_driver_options(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The ``driver.*`` options of a source, without the prefix, sorted;
    ``transforms`` defaulting to ``auto`` as everywhere (see
    :mod:`offload_core.read_transforms`)."""
    given = {name[len("driver.") :]: value for name, value in options.items() if name.startswith("driver.")}
    return tuple(sorted(with_read_transforms(given).items()))


def _ledger_ids(value: str | None) -> frozenset[int] | None:
    if not value:
        return None
    try:
        return frozenset(int(part) for part in value.split(","))
    except ValueError:
        raise ConfigError(f"pulsar-offload: ledgers is a comma-separated list of ledger ids, not {value!r}") from None


def _ledger_uuids(value: str | None) -> frozenset[tuple[int, str]] | None:
    if value is None:
        return None
    pairs = set()
    for part in filter(None, (text.strip() for text in value.split(","))):
        ledger, colon, uid = part.partition(":")
        try:
            pairs.add((int(ledger), str(uuid.UUID(uid))))
        except ValueError:
            raise ConfigError(
                f"pulsar-offload: bad ledgerUuids pair {part!r}; write LEDGER:UUID, comma-separated"
            ) from None
    return frozenset(pairs)


def _ranges(value: str | None) -> tuple[tuple[int, int, int | None], ...]:
    if not value:
        return ()
    ranges = []
    for part in value.split(","):
        try:
            ledger, _, span = part.strip().partition(":")
            first, dash, last = span.partition("-")
            start = int(first)
            end = (int(last) if last else None) if dash else start
            ranges.append((int(ledger), start, end))
        except ValueError:
            raise ConfigError(
                f"pulsar-offload: bad entries range {part!r}; write LEDGER:FIRST-LAST, LEDGER:FIRST- or "
                "LEDGER:ENTRY, comma-separated (e.g. 12:0-99,13:500-)"
            ) from None
        if start < 0 or (end is not None and end < start):
            raise ConfigError(f"pulsar-offload: entries range {part!r} is empty or negative")
    return tuple(ranges)


def positive_option(options: Mapping[str, str], name: str, default: int, *, source: str = "pulsar-offload") -> int:
    """Option ``name`` of a source as a positive integer (``default`` when
    not given); :class:`ConfigError` naming the source and the option else."""
    raw = options.get(name, str(default))
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{source}: {name} is a positive integer, not {raw!r}")
    return value


def _boolean(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name, str(default)).lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"pulsar-offload: {name} is true or false, not {raw!r}")
    return raw == "true"
