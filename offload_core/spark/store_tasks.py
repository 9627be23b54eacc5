"""Work over a store's offloads (of every kind the installed offloaders
write), spread over Spark tasks that each open their own storage driver."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..offload.stored.kinds import StoredKind, StoredOffload
from ..plugins import PluginManager, default_plugin_manager, open_driver
from ..storage import StorageDriver
from .progress import Progress, run_with_progress

__all__ = ["Found", "Store", "installed_kinds", "map_with_driver"]

Found = tuple[StoredKind, StoredOffload]
"""An offload and the kind that found it (the kind travels with it to the
executors, where a plugin registered only in this process is unknown)."""


def installed_kinds(plugin_manager: PluginManager | None = None) -> list[StoredKind]:
    """The kinds of stored offload the offloaders of ``plugin_manager``
    (default: the process's) write."""
    return (plugin_manager or default_plugin_manager()).stored_kinds()


T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Store:
    """Where a job's objects are: a URL and driver options. Picklable."""

    url: str
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, url: str, options: Mapping[str, Any] | None = None) -> Store:
        return cls(url, tuple(sorted((options or {}).items())))

    def open(self) -> StorageDriver:
        return open_driver(self.url, **dict(self.options))

    def offloads(self, kinds: Sequence[StoredKind], prefix: str = "") -> list[Found]:
        """Every offload of ``kinds`` under ``prefix``, listed where this
        runs, kind by kind."""
        driver = self.open()
        try:
            return [(kind, offload) for kind in kinds for offload in kind.find(driver, prefix)]
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
