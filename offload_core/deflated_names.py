"""Names (file names, object keys) held as one raw-deflated blob of their
UTF-8, NUL-separated, while they wait to be given out again in order: a
name sorted after another repeats much of its start, and hex digits and
fixed words deflate well, so a run of ledger keys with random uuids takes
some 25 bytes a name where a list of strings takes over 100.

Names the operating system could not decode carry lone surrogates
(Python's ``surrogateescape``); they are kept as they are
(``surrogatepass``), so a name comes back exactly as it was given."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence

from .errors import InvalidKeyError

__all__ = ["deflated_names", "inflated_names"]

_SEPARATOR = "\0"  # no valid key or file name holds it
_ERRORS = "surrogatepass"
# A sorted name shares most with the names just before it, and each blob being inflated keeps an inflater (11 KB
# with a 4 KiB window, 40 with zlib's default 32 KiB; a smaller window deflates slower for little gain).
_WINDOW_BITS = 12
_CHUNK = 1024  # compressed bytes inflated at a time (some 40 names)


def deflated_names(names: Sequence[str]) -> bytes:
    """``names`` (at least one) as one blob :func:`inflated_names` gives
    back. Raises :class:`InvalidKeyError` naming a name that holds a NUL
    (which no valid key or file name does)."""
    joined = _SEPARATOR.join(names)
    if names and joined.count(_SEPARATOR) != len(names) - 1:
        held = next(name for name in names if _SEPARATOR in name)
        raise InvalidKeyError(f"{held!r} holds a NUL byte, which no object key or file name may: it cannot be listed")
    encoded = joined.encode("utf-8", _ERRORS)
    del joined  # not held while it deflates: a run of 8,192 names is some 400 KB
    deflate = zlib.compressobj(1, zlib.DEFLATED, -_WINDOW_BITS, 8)
    return deflate.compress(encoded) + deflate.flush()


def inflated_names(blob: bytes) -> Iterator[str]:
    """The names :func:`deflated_names` made ``blob`` of, in their order,
    as they inflate: a chunk's worth held at a time."""
    inflate = zlib.decompressobj(-_WINDOW_BITS)
    held = b""
    for at in range(0, len(blob) + _CHUNK, _CHUNK):
        held += inflate.decompress(blob[at : at + _CHUNK]) if at < len(blob) else inflate.flush() + b"\0"
        whole = held.rfind(b"\0")  # the names ended so far (a name may go on in the next chunk)
        if whole >= 0:
            yield from held[:whole].decode("utf-8", _ERRORS).split(_SEPARATOR)
            held = held[whole + 1 :]
