"""Work over a store's offloads (of every kind the installed offloaders
write), spread over Spark tasks that each open their own storage driver,
and the checks that turn a task's environment problem (no offload-core, no
credentials, no driver plugin) into one error on the Spark driver naming
what to fix."""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import AccessDeniedError, ConfigError, OffloadError
from ..offload.stored.kinds import StoredKind, StoredOffload
from ..plugins import PluginManager, default_plugin_manager, open_driver
from ..read_transforms import with_read_transforms
from ..redaction import redact_url_text
from ..storage import StorageDriver
from . import source
from .progress import Progress, run_with_progress
from .store_urls import pinned_url

__all__ = ["Found", "Store", "TaskFailure", "collect_guarded", "installed_kinds", "map_with_driver"]

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
    """Where a job's objects are: a URL and driver options. Picklable;
    built with :meth:`of`, the URL means the same store on every executor.
    ``skips``: the application's skip accumulator, which a read's tasks
    record what ``failOnDataLoss=false`` skipped on
    (:mod:`~offload_core.spark.data_loss`), if the read has one."""

    url: str
    options: tuple[tuple[str, Any], ...] = ()
    skips: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, url: str, options: Mapping[str, Any] | None = None) -> Store:
        """The store at ``url`` (pinned: the same store on every executor),
        read through transforms as everywhere (``transforms`` defaults to
        ``auto``; see :mod:`offload_core.read_transforms`)."""
        return cls(pinned_url(url), tuple(sorted(with_read_transforms(options or {}).items())))

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


@dataclass(frozen=True)
class TaskFailure:
    """A task that could not use the store at all (credentials refused or
    missing, its driver not installed, options it rejects): the same in
    every task, so it ends the job instead of becoming a defect per ledger."""

    host: str
    url: str
    error: OffloadError

    def for_driver(self) -> OffloadError:
        """The error to raise on the Spark driver: the task's, with where it happened and the fix."""
        where = f"a Spark task on {self.host} cannot use the store {redact_url_text(self.url)}: {self.error}."
        if isinstance(self.error, AccessDeniedError):
            fix = (
                "The store refused the credentials the job passed: executors use its driver options alone (never "
                "the Spark driver's environment or files), so correct them there"
            )
        else:
            fix = (
                "Executors see only what the job passes (its driver options), never the Spark driver's environment "
                "or files: pass credentials as driver options, and install offload-core and the store's driver on "
                "every worker"
            )
        return type(self.error)(f"{where} {fix}")


def collect_guarded(rdd: Any, task: Callable[[Iterator[T]], Iterator[R | TaskFailure]]) -> list[R]:
    """``rdd.mapPartitions(task).collect()``, each task first checking its
    worker can import offload-core.

    Raises :class:`~offload_core.spark.WorkerEnvironmentError` naming the
    worker's interpreter if one cannot, and a task's :class:`TaskFailure`
    as :meth:`TaskFailure.for_driver`."""
    from pyspark import cloudpickle

    guarded = functools.partial(source.guarded_partition, cloudpickle.dumps(task))  # type: ignore[no-untyped-call]
    results = rdd.mapPartitions(guarded).collect()
    for result in results:
        if isinstance(result, tuple) and result[:1] == (source.UNUSABLE_WORKER,):
            raise source.WorkerEnvironmentError(result[1])
        if isinstance(result, TaskFailure):
            raise result.for_driver()
    return results  # type: ignore[no-any-return]


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
    its items and lists one page of the store first, so a store it cannot
    use fails the job once (see :func:`collect_guarded`) rather than each
    item. ``work`` must be picklable (a module-level function)."""
    if not items:
        return []
    context = spark.sparkContext
    slices = min(len(items), max(1, context.defaultParallelism) * tasks_per_slot)

    def run_partition(part: Iterator[T]) -> Iterator[R | TaskFailure]:
        try:
            driver = store.open()
            next(iter(driver.list("")), None)
        except (AccessDeniedError, ConfigError) as exc:
            yield TaskFailure(socket.gethostname(), store.url, exc)
            return
        try:
            for item in part:
                yield work(driver, item)
        finally:
            driver.close()

    def collect() -> list[R]:
        return collect_guarded(context.parallelize(list(items), slices), run_partition)

    return run_with_progress(spark, description, collect, progress)
