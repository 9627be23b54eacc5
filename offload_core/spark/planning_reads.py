"""The storage a read's planning on the Spark driver uses: the store opened
so that listing it costs only the listing, and many small objects
(indexes) fetched by a few threads, each with its own storage driver,
since against a remote store planning waits on requests."""

from __future__ import annotations

import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from ..errors import NotFoundError, StateError
from ..model import ObjectInfo
from ..plugins import open_driver
from ..reads_ahead import map_ahead
from ..storage import BytesLike, StorageDriver
from ..transforming_driver import TransformingDriver
from ..wrapping_driver import WrappingDriver
from .data_loss import log_vanished_object
from .read_options import ReadOptions
from .sorted_keys import SortedKeys

__all__ = ["ListedOnce", "open_planning_driver", "read_objects", "vanished_while_planning"]

T = TypeVar("T")
K = TypeVar("K")
_NO_METADATA: Mapping[str, str] = {}


class _StoredListing(WrappingDriver):
    """A transforming driver whose listing is the store's own: keys with
    their stored sizes. The transforming driver's listing stats every
    object to learn whether it was transformed and its logical size (a
    HEAD per object on a cloud store); planning needs only the keys, and
    reads (through the transforms) the few objects it plans from."""

    def __init__(self, reading: TransformingDriver) -> None:
        super().__init__(reading)
        self._bare = reading.inner

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self._bare.list(prefix)

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        return self.inner.read(key, start, end)

    def _stat(self, key: str) -> ObjectInfo:
        return self.inner.stat(key)

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        return self.inner.write(key, parts, metadata=metadata, if_absent=if_absent)

    def _delete(self, keys: Sequence[str]) -> None:
        self.inner.delete(keys)


class ListedOnce(WrappingDriver, Generic[K]):
    """``inner`` listed once: its first listing lists the whole store (each
    record passed on as it comes), and every later listing (of any prefix)
    is served from what it kept, so that the kinds of offload, each finding
    its objects by a listing of its own, cost one listing of the store
    between them. Objects written after that listing are not listed.
    Reads, stats and writes go to ``inner``.

    The first listing is kept once taken to its end (one left part way is
    made again from ``inner``). Keys ``taken_by_first`` makes something
    true of are the first listing's consumer's alone: later listings leave
    them out (planning has a kind that reads them from a first listing of
    the whole store as it comes, so they are never held); that consumer
    gets what it made of each key with its record from
    :meth:`first_listing`, so the key is parsed once.
    The rest is kept as keys and sizes (the records are made again as they
    are served, with the metadata and etag the listing gave): a listed
    record would cost several times its key, and the keys are held
    deflated (:class:`~.sorted_keys.SortedKeys`, some 25 bytes a key of
    offloads named by random uuids), exactly as listed (names the
    operating system could not decode included). A first listing out of
    key order raises :class:`StateError` (see :meth:`SortedKeys.append`):
    kept, it would be served wrongly. A key holding a NUL byte, which no
    valid key does, is passed on by the first listing and not kept."""

    def __init__(self, inner: StorageDriver, taken_by_first: Callable[[str], K] | None = None) -> None:
        super().__init__(inner)
        self._taken_by_first = taken_by_first
        self._keys: SortedKeys | None = None
        self._sizes = array("q")
        self._etags: dict[int, str] = {}
        self._metadata: dict[int, Mapping[str, str]] = {}

    def first_listing(self) -> Iterator[tuple[ObjectInfo, K | None]]:
        """The whole store's first listing, as :meth:`list` gives it, each
        record with what ``taken_by_first`` made of its key (``None``
        without one). Raises :class:`StateError` if the store's listing was
        kept already (this is the first listing's, to be taken first)."""
        if self._keys is not None:
            raise StateError("the store's listing was taken already: take first_listing() before any other listing")
        return self._first_listing()

    def _list(self, prefix: str) -> Iterator[ObjectInfo]:
        if self._keys is None:
            if not prefix:
                yield from (info for info, _ in self._first_listing())
                return
            for _ in self._first_listing():
                pass
            assert self._keys is not None
        sizes = self._sizes
        for at, key in self._keys.starting_with(prefix):
            yield ObjectInfo(key, sizes[at], self._metadata.get(at, _NO_METADATA), self._etags.get(at))

    def _first_listing(self) -> Iterator[tuple[ObjectInfo, K | None]]:
        keys = SortedKeys()
        sizes = array("q")
        etags: dict[int, str] = {}
        metadata: dict[int, Mapping[str, str]] = {}
        taken = self._taken_by_first
        for info in self.inner.list(""):
            made = None if taken is None else taken(info.key)
            yield info, made
            if made or "\0" in info.key:
                # A NUL is in no valid key (validate_key), so in none a kind lists again: a foreign object
                # a store allowed it for is passed on above and not kept (SortedKeys refuses it).
                continue
            if info.etag is not None:
                etags[len(keys)] = info.etag
            if info.metadata:
                metadata[len(keys)] = info.metadata
            keys.append(info.key)
            sizes.append(info.size)
        self._keys, self._sizes, self._etags, self._metadata = keys, sizes, etags, metadata

    def _read(self, key: str, start: int, end: int | None) -> bytes:
        return self.inner.read(key, start, end)

    def _stat(self, key: str) -> ObjectInfo:
        return self.inner.stat(key)

    def _write(self, key: str, parts: Iterator[BytesLike], metadata: dict[str, str], if_absent: bool) -> ObjectInfo:
        return self.inner.write(key, parts, metadata=metadata, if_absent=if_absent)

    def _delete(self, keys: Sequence[str]) -> None:
        self.inner.delete(keys)


def open_planning_driver(url: str, options: Iterable[tuple[str, str]]) -> StorageDriver:
    """The store at ``url`` opened with the driver ``options`` for
    planning: reads, stats and writes as :func:`open_driver` opens it (read
    transforms applied), listings without a request per object listed
    (their sizes are the stored sizes). Raises what :func:`open_driver`
    raises."""
    opened: dict[str, Any] = dict(options)
    driver = open_driver(url, **opened)
    return _StoredListing(driver) if isinstance(driver, TransformingDriver) else driver


def read_objects(options: ReadOptions, keys: Iterable[str], decode: Callable[[bytes], T]) -> Iterator[T | None]:
    """``decode(object)`` for each of ``keys`` in the store ``options``
    names, in order, as they come, a few at a time (each thread with its
    own driver), with what is fetched or held ahead of the caller bounded
    as :func:`~offload_core.reads_ahead.map_ahead` bounds it; ``keys`` (an
    iterator will do) is taken as far as that. A key no longer there (deleted since
    it was listed) gives ``None`` with ``failOnDataLoss=false`` (logged,
    and recorded on ``options.planning_skips`` if it is a list)
    and raises :class:`NotFoundError` naming it with the default, true (see
    :func:`vanished_while_planning`). Nothing of an object is kept once
    it is read (a transforms driver's layout of it is dropped: each is
    read once). Raises what a read or ``decode`` raised."""
    local = threading.local()
    driver_options: dict[str, Any] = dict(options.driver_options)
    opened: list[StorageDriver] = []
    lock = threading.Lock()

    def read(key: str) -> T | None:
        driver = getattr(local, "driver", None)
        if driver is None:
            driver = local.driver = open_driver(options.url, **driver_options)
            with lock:
                opened.append(driver)
        try:
            data = driver.read(key)
        except NotFoundError as exc:
            vanished_while_planning(options, key, exc)
            return None
        finally:
            if isinstance(driver, TransformingDriver):
                # Kept, its layout would hold the key (some 150 bytes) to no use, up to 4,096 objects a thread.
                driver.forget(key)
        return decode(data)

    try:
        yield from map_ahead(read, keys)
    finally:
        for driver in opened:
            driver.close()


def vanished_while_planning(options: ReadOptions, key: str, exc: NotFoundError) -> None:
    """Object ``key``, listed by the planning of a read of the store
    ``options`` names, was deleted before planning read it (a retention
    run, an operator): raise :class:`NotFoundError` naming it, or, with
    ``failOnDataLoss=false``, log it on the data-loss logger (see
    :mod:`offload_core.spark.data_loss`) for the caller to plan without
    it, and add its record to ``options.planning_skips`` if that is a list."""
    if options.fail_on_data_loss:
        raise NotFoundError(f"{key} vanished while the read was planned ({exc}): what it indexed is lost to this "
                            "read (a new read plans without it, its offload no longer complete); set "
                            "failOnDataLoss=false to plan without it and log it") from None  # fmt: skip
    record = log_vanished_object(options.url, key)
    if options.planning_skips is not None:
        options.planning_skips.append(record)  # one append: safe from the reading threads
