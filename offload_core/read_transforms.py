"""The one default of chunk transforms for whatever opens a store to read
it: the ``offload`` verbs, the Spark sources and the Spark jobs.

``auto``: an object written through chunk transforms reads as it was
written (the chain comes from its metadata, one stat per object), a plain
one as it is. ``none`` opens the bare driver (stored bytes as they are);
a chain (``zstd,crc32c``) also writes through it. The Spark sources'
planning lists the store below the transforms (keys alone: no stat per
object listed) and stats only the objects it reads (and, in Aiven's
layout, a segment's ``.log`` and ``.indexes`` listed at another size than
its manifest gives: written through transforms, their stored size)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["READ_TRANSFORMS_DEFAULT", "with_read_transforms"]

READ_TRANSFORMS_DEFAULT = "auto"


def with_read_transforms(options: Mapping[str, Any]) -> dict[str, Any]:
    """Driver ``options`` with ``transforms`` set to :data:`READ_TRANSFORMS_DEFAULT`
    unless given; ``transforms=none`` removes it (the bare driver)."""
    chosen = dict(options)
    value = chosen.setdefault("transforms", READ_TRANSFORMS_DEFAULT)
    if isinstance(value, str) and value.strip().lower() == "none":
        del chosen["transforms"]
    return chosen
