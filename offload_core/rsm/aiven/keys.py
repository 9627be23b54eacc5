"""Object keys of Aiven's tiered-storage plugin (``ObjectKeyFactory``). Pure.

``<key.prefix><topic>-<topicId>/<partition>/<%020d start offset>-<segmentId>.<suffix>``
with suffix ``log``, ``indexes`` or ``rsm-manifest``. The prefix is prepended
verbatim (no ``/`` added), so a key only parses against a known prefix. Ids
are Kafka ``Uuid``s as 22 characters of URL-safe base64 without padding; a
topic name may contain ``-``, so the topic id is the last 22 characters of
the topic directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal, get_args

from ...errors import FormatError

Suffix = Literal["log", "indexes", "rsm-manifest"]
SUFFIXES: tuple[Suffix, ...] = get_args(Suffix)

_UUID = r"[A-Za-z0-9_-]{22}"
# Kafka's legal topic characters (Topic.validate); 249 is its length limit.
_KEY = re.compile(
    rf"(?P<topic>[A-Za-z0-9._-]{{1,249}})-(?P<topic_id>{_UUID})/(?P<partition>0|[1-9][0-9]{{0,9}})/"
    rf"(?P<offset>[0-9]{{20}})-(?P<segment_id>{_UUID})\.(?P<suffix>log|indexes|rsm-manifest)"
)
_MAX_INT32 = 2**31 - 1
_MAX_INT64 = 2**63 - 1


@dataclass(frozen=True)
class ObjectKey:
    """One object of one remote segment, as the plugin names it."""

    prefix: str
    topic: str
    topic_id: str
    partition: int
    start_offset: int
    segment_id: str
    suffix: Suffix

    @property
    def key(self) -> str:
        """The object key, formatted as ``ObjectKeyFactory`` does."""
        return (
            f"{self.prefix}{self.topic}-{self.topic_id}/{self.partition}/"
            f"{self.start_offset:020d}-{self.segment_id}.{self.suffix}"
        )

    def with_suffix(self, suffix: Suffix) -> ObjectKey:
        """The same segment's object with another suffix."""
        return replace(self, suffix=suffix)


def parse_key(key: str, prefix: str = "") -> ObjectKey | None:
    """The parts of ``key`` written under ``prefix``, or None when ``key`` is
    not a segment object of that prefix (for listings, which hold other
    objects too)."""
    if not key.startswith(prefix):
        return None
    found = _KEY.fullmatch(key, len(prefix))
    if found is None:
        return None
    partition, offset = int(found["partition"]), int(found["offset"])
    if partition > _MAX_INT32 or offset > _MAX_INT64:
        return None
    return ObjectKey(
        prefix=prefix,
        topic=found["topic"],
        topic_id=found["topic_id"],
        partition=partition,
        start_offset=offset,
        segment_id=found["segment_id"],
        suffix=found["suffix"],  # type: ignore[arg-type]  # the pattern allows only SUFFIXES
    )


def require_key(key: str, prefix: str = "") -> ObjectKey:
    """Like :func:`parse_key`, but a key that does not parse raises
    :class:`FormatError` naming it."""
    parsed = parse_key(key, prefix)
    if parsed is None:
        raise FormatError(
            f"{key!r} is not an Aiven tiered-storage segment object under prefix {prefix!r}: expected "
            "'<prefix><topic>-<22-char topic id>/<partition>/<20-digit offset>-<22-char segment id>"
            ".{log|indexes|rsm-manifest}'"
        )
    return parsed


COPIER_LEASES = "offload-core-copier-leases/"
"""Where (under the key prefix) our copiers keep their leases: never a
segment key (:func:`parse_key` matches none), so the plugin, its listing
and ours pass over them."""


def copier_lease_path(prefix: str, topic: str, topic_id: str, partition: int) -> str:
    """The record path of one partition's copier lease under ``prefix``."""
    return f"{prefix}{COPIER_LEASES}{topic}-{topic_id}/{partition}"
