"""Which payloads a segment block being filled may keep referencing until
it finishes, to be copied once when its bytes are joined, instead of being
framed into bytes of the block's own when they are offered. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

__all__ = ["may_keep"]

# Referencing a payload until its block finishes costs, beyond its framing,
# a 12-byte header object and two list slots (about 80 bytes) for
# ``bytes``, and a memoryview object besides (about 250 in all) for a
# view: kept only where that is at most 8% of the payloads on average (a
# growing bytearray's over-allocation, 1/8, cost more).
_MEAN_BYTES = 1024
_MEAN_VIEW = 3 * 1024
_OWNER = attrgetter("obj")


def may_keep(payloads: Sequence[bytes | memoryview], payload_bytes: int) -> bool:
    """Whether ``payloads`` (``payload_bytes`` in all) may be referenced
    until their block finishes: large enough on average, and either
    ``bytes`` or views of ``bytes`` (neither can change) that hold on to at
    most twice what they show. A segment worker offers views of one read
    of the hot tier: kept, they save a copy of every byte; a few entries of
    a larger read (the rest refused, or in the next block) are copied, so
    that the read is not held for them."""
    count = len(payloads)
    if payload_bytes < _MEAN_BYTES * count:
        return False
    kinds = set(map(type, payloads))
    if kinds == {bytes}:
        return True
    if kinds != {memoryview} or payload_bytes < _MEAN_VIEW * count:
        return False
    owners = {id(owner): owner for owner in map(_OWNER, payloads)}
    return all(type(owner) is bytes for owner in owners.values()) and (
        sum(map(len, owners.values())) <= 2 * payload_bytes
    )
