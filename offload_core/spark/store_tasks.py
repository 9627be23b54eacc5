"""Work over a store's ledgers, spread over Spark tasks that each open their
own storage driver."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..offload.ledgers.inventory import OffloadedLedger, find_offloaded_ledgers
from ..plugins import open_driver
from ..read_transforms import with_read_transforms
from ..storage import StorageDriver
from .progress import Progress, run_with_progress

__all__ = ["Store", "map_with_driver"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Store:
    """Where a job's objects are: a URL and driver options. Picklable."""

    url: str
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, url: str, options: Mapping[str, Any] | None = None) -> Store:
        """The store at ``url``, read through transforms as everywhere
        (``transforms`` defaults to ``auto``; see :mod:`offload_core.read_transforms`)."""
        return cls(url, tuple(sorted(with_read_transforms(options or {}).items())))

    def open(self) -> StorageDriver:
        return open_driver(self.url, **dict(self.options))

    def ledgers(self, prefix: str = "") -> list[OffloadedLedger]:
        """Every offloaded ledger under ``prefix``, listed where this runs."""
        driver = self.open()
        try:
            return find_offloaded_ledgers(driver, prefix)
        finally:
            driver.close()


def map_with_driver(
    spark: Any,
    description: str,
    items: Sequence[T],
    work: Callable[[StorageDriver, T], R],
    store: Store,
    *,
    progress: Callable[[Progress], None] | None = None,
    tasks_per_slot: int = 4,
) -> list[R]:
    """``work(driver, item)`` for every item, in order, in Spark tasks
    (``tasks_per_slot`` per executor slot); each task opens one driver for
    its items. ``work`` must be picklable (a module-level function)."""
    if not items:
        return []
    context = spark.sparkContext
    slices = min(len(items), max(1, context.defaultParallelism) * tasks_per_slot)

    def run_partition(part: Iterator[T]) -> Iterator[R]:
        driver = store.open()
        try:
            for item in part:
                yield work(driver, item)
        finally:
            driver.close()

    def collect() -> list[R]:
        return context.parallelize(list(items), slices).mapPartitions(run_partition).collect()  # type: ignore[no-any-return]

    return run_with_progress(spark, description, collect, progress)
