"""Many small reads (indexes, manifests) sent a few at a time, their
results taken in order: against a remote store a listing's worth of small
objects read one after another waits one round trip each."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

__all__ = ["DEFAULT_THREADS", "map_ahead"]

T = TypeVar("T")
R = TypeVar("R")
DEFAULT_THREADS = 8


def map_ahead(fn: Callable[[T], R], items: Iterable[T], *, threads: int = DEFAULT_THREADS) -> Generator[R, None, None]:
    """``fn(item)`` for each of ``items``, in their order, as they come,
    ``threads`` calls at a time. At most ``4 * threads`` results are
    fetched or held ahead of the one the caller is at, and ``items`` (an
    iterator will do) is taken only as far as that, so memory is bounded
    whatever the number of items. ``fn`` must be safe to call from several
    threads at once.

    Raises what ``fn`` raised, at that item's place in the order. Closing
    the iterator early cancels the calls not yet started and waits for
    those running."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1, not {threads}")
    ahead = 4 * threads
    pool = ThreadPoolExecutor(max_workers=threads)  # threads start as items come
    pending: deque[Future[R]] = deque()
    try:
        for item in items:
            if len(pending) >= ahead:
                yield pending.popleft().result()
            pending.append(pool.submit(fn, item))
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
