"""A directory's names in sorted order, held compactly while they wait.

A flat store keeps every object's file in one directory, and a listing
must give them in key order, so all of a directory's names are held from
its scan until the last is listed. As a sorted list of strings that is
some 110 bytes a name (the string's header and the list's reference
around a name of 40 to 60 characters). Sorted in runs, each run held as
one deflated blob of its names and the runs merged as they are listed,
it is some 30 (a sorted name repeats the start of the one before it, and
hex digits and fixed words deflate well), for about a third more time
(run G in bench/README.md)."""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Iterable, Iterator
from itertools import islice

__all__ = ["RUN", "sorted_names"]

RUN = 8192
"""Names sorted together in one list: a directory of fewer than this many is
sorted as a plain list; one of this many or more is merged from runs this
long (a full batch is deflated before the scan is known to have ended)."""

_SEPARATOR = b"\0"  # no file name holds it
# Raw deflate with a 4 KiB window: a sorted name shares most with the names just before it, and each run being
# merged keeps an inflater (11 KB with this window, 40 with zlib's default 32 KiB; a smaller window deflates
# slower for little gain).
_WINDOW_BITS = 12
_CHUNK = 1024  # compressed bytes inflated at a time while a run is merged (some 40 names)
# Names the operating system could not decode carry lone surrogates (Python's surrogateescape): kept as they are.
_ERRORS = "surrogatepass"


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
        deflate = zlib.compressobj(1, zlib.DEFLATED, -_WINDOW_BITS, 8)
        runs.append(deflate.compress("\0".join(batch).encode("utf-8", _ERRORS)) + deflate.flush())
        batch = list(islice(given, run))
    batch.sort()
    if not runs:
        return iter(batch)
    return heapq.merge(batch, *map(_names_of, runs))


def _names_of(blob: bytes) -> Iterator[str]:
    """The names of a run, as they inflate: a chunk's worth held at a time."""
    inflate = zlib.decompressobj(-_WINDOW_BITS)
    held = b""
    for at in range(0, len(blob) + _CHUNK, _CHUNK):
        held += inflate.decompress(blob[at : at + _CHUNK]) if at < len(blob) else inflate.flush() + _SEPARATOR
        whole = held.rfind(_SEPARATOR)  # the names ended so far (a name may go on in the next chunk)
        if whole >= 0:
            yield from held[:whole].decode("utf-8", _ERRORS).split("\0")
            held = held[whole + 1 :]
