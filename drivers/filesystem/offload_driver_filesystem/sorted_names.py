"""A directory's names in sorted order, held compactly while they wait.

A flat store keeps every object's file in one directory, and a listing
must give them in key order, so all of a directory's names are held from
its scan until the last is listed. As a sorted list of strings that is
some 110 bytes a name (the string's header and the list's reference
around a name of 40 to 60 characters). Sorted in runs, each run held as
one deflated blob of its names (:mod:`offload_core.deflated_names`) and
the runs merged as they are listed, it is some 30 (a sorted name repeats
the start of the one before it, and hex digits and fixed words deflate
well), for about a third more time (run G in bench/README.md)."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from itertools import islice

from offload_core.deflated_names import deflated_names, inflated_names

__all__ = ["RUN", "sorted_names"]

RUN = 8192
"""Names sorted together in one list: a directory of fewer than this many is
sorted as a plain list; one of this many or more is merged from runs this
long (a full batch is deflated before the scan is known to have ended)."""


def sorted_names(names: Iterable[str], run: int | None = None) -> Iterator[str]:
    """``names`` (none empty or holding NUL, as no file name is) in the
    order ``sorted`` gives them. ``names`` is read to its end before this
    returns (a directory's scan can be closed at once); the names come out
    as they are asked for. ``run``: names sorted together in one list
    (default :data:`RUN`)."""
    run = RUN if run is None else run
    given = iter(names)
    runs: list[bytes] = []
    batch = list(islice(given, run))
    while len(batch) == run:
        batch.sort()
        runs.append(deflated_names(batch))
        batch = list(islice(given, run))
    batch.sort()
    if not runs:
        return iter(batch)
    return heapq.merge(batch, *map(inflated_names, runs))
