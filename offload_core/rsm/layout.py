"""Where a remote segment's objects live, and the manifest that commits
one. Pure.

Keys: ``<prefix>/<topic>-<partition>-<topic id>/<20-digit base offset>-<segment id>.<suffix>``
(the directory name of Kafka's ``LocalTieredStorage``; objects written
before topic ids were kept have no ``-<topic id>`` and read as the unknown
id) with the suffixes of Kafka's ``LocalTieredStorage`` (``log``, ``index``,
``timeindex``, ``txnindex``, ``snapshot``, ``leader_epoch_checkpoint``) plus
``rsm-manifest``. The manifest is written last, after every other object of
the copy, and deleted first: a segment whose manifest exists is complete, so
readers that have only the store (the CLI, Spark) list manifests and never
see a half-copied or half-deleted segment.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import FormatError
from .leader_epochs import LeaderEpochStarts
from .types import (
    UNKNOWN_TOPIC_ID,
    IndexType,
    RemoteLogIndexEntry,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
    TopicPartition,
)

__all__ = [
    "DATA_SUFFIXES",
    "LOG_SUFFIX",
    "MANIFEST_SUFFIX",
    "SegmentManifest",
    "SegmentName",
    "decode_manifest",
    "decode_stored_manifest",
    "encode_manifest",
    "parse_name",
    "partition_prefix",
    "segment_key",
]

MANIFEST_SUFFIX = "rsm-manifest"
LOG_SUFFIX = "log"
DATA_SUFFIXES = (LOG_SUFFIX, *(t.suffix for t in IndexType))
MANIFEST_FORMAT = "offload-core-rsm-manifest/1"
_NAME = re.compile(r"([0-9]{20})-([A-Za-z0-9_][A-Za-z0-9_-]{21})\.([a-z_-]+)")


def partition_prefix(prefix: str, topic_id_partition: TopicIdPartition) -> str:
    """``<prefix>/<topic>-<partition>-<topic id>/`` (no leading slash when
    the prefix is empty; no ``-<topic id>`` for the unknown id)."""
    head = prefix.strip("/")
    name = topic_id_partition.directory_name
    return f"{head}/{name}/" if head else f"{name}/"


def segment_key(prefix: str, segment_id: RemoteLogSegmentId, base_offset: int, suffix: str) -> str:
    return f"{partition_prefix(prefix, segment_id.topic_id_partition)}{base_offset:020d}-{segment_id.id}.{suffix}"


@dataclass(frozen=True)
class SegmentName:
    base_offset: int
    segment_id: str
    suffix: str


def parse_name(name: str) -> SegmentName | None:
    """The parts of an object name under a partition prefix, or ``None`` for a
    name that is not one of ours."""
    match = _NAME.fullmatch(name)
    if match is None:
        return None
    return SegmentName(int(match.group(1)), match.group(2), match.group(3))


@dataclass(frozen=True, slots=True)
class SegmentManifest:
    """What a store alone says about a copied segment: its metadata, the
    sizes of its objects (a missing index type is absent), and the index
    entries :meth:`RemoteStorageManager.copy_log_segment` returned."""

    metadata: RemoteLogSegmentMetadata
    object_sizes: Mapping[str, int]
    index_entries: tuple[RemoteLogIndexEntry, ...]


def encode_manifest(manifest: SegmentManifest) -> bytes:
    meta = manifest.metadata
    body: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        "topic_id": meta.topic_id_partition.topic_id,
        "topic": meta.topic_partition.topic,
        "partition": meta.topic_partition.partition,
        "segment_id": meta.segment_id.id,
        "start_offset": meta.start_offset,
        "end_offset": meta.end_offset,
        "max_timestamp_ms": meta.max_timestamp_ms,
        "broker_id": meta.broker_id,
        "event_timestamp_ms": meta.event_timestamp_ms,
        "segment_size_in_bytes": meta.segment_size_in_bytes,
        "segment_leader_epochs": [[epoch, offset] for epoch, offset in sorted(meta.segment_leader_epochs.items())],
        "objects": dict(sorted(manifest.object_sizes.items())),
        "index_entries": [
            [e.first_offset, e.last_offset, e.first_timestamp, e.last_timestamp, e.position, e.length]
            for e in manifest.index_entries
        ],
    }
    return json.dumps(body, separators=(",", ":")).encode()


def decode_manifest(data: bytes, *, key: str = "manifest") -> SegmentManifest:
    """The manifest in ``data``; :class:`FormatError` naming ``key`` if it is
    not one (damaged JSON, missing fields, another format version) or is
    that of a legacy empty segment (:func:`decode_stored_manifest`). One
    written before topic ids were kept has the unknown topic id."""
    manifest = decode_stored_manifest(data, key=key)
    if manifest is None:
        raise FormatError(f"{key} commits an empty segment an earlier version tiered: it holds no offset; "
                          "`offload kafka ls` lists it, deleting the partition removes it")  # fmt: skip
    return manifest


def decode_stored_manifest(
    data: bytes, *, key: str = "manifest", partition: TopicIdPartition | None = None
) -> SegmentManifest | None:
    """As :func:`decode_manifest`, but ``None`` for the manifest of an empty
    (active) segment that versions before Kafka's copy contract tiered
    (``end_offset = start_offset - 1`` and no leader epochs, which
    :class:`RemoteLogSegmentMetadata` now refuses): it holds no offset, so
    readers skip it rather than fail the whole partition. A manifest of
    ``partition`` (when given) names that very object."""
    try:
        body = json.loads(data)
        if body.get("format") != MANIFEST_FORMAT:
            raise FormatError(f"{key}: format {body.get('format')!r} is not {MANIFEST_FORMAT!r}")
        if int(body["end_offset"]) == int(body["start_offset"]) - 1 and not body["segment_leader_epochs"]:
            return None
        # A listing holds a partition's manifests at once: its names (and partition) are held once, not once each.
        topic_partition = TopicPartition(sys.intern(body["topic"]), int(body["partition"]))
        topic_id = sys.intern(body.get("topic_id", UNKNOWN_TOPIC_ID))
        named = TopicIdPartition(topic_id, topic_partition)
        segment_id = RemoteLogSegmentId(partition if named == partition else named, body["segment_id"])
        metadata = RemoteLogSegmentMetadata(
            segment_id,
            start_offset=int(body["start_offset"]),
            end_offset=int(body["end_offset"]),
            max_timestamp_ms=int(body["max_timestamp_ms"]),
            broker_id=int(body["broker_id"]),
            event_timestamp_ms=int(body["event_timestamp_ms"]),
            segment_size_in_bytes=int(body["segment_size_in_bytes"]),
            segment_leader_epochs=LeaderEpochStarts({int(e): int(o) for e, o in body["segment_leader_epochs"]}),
            state=RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
        )
        sizes = {sys.intern(str(name)): int(size) for name, size in body["objects"].items()}
        start = metadata.start_offset
        entries = tuple(RemoteLogIndexEntry(segment_id, start, *(int(v) for v in row)) for row in body["index_entries"])
    except FormatError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        problem = f"{type(exc).__name__}: {exc}"
        raise FormatError(f"{key} is not a segment manifest ({problem}): the object is damaged") from None
    return SegmentManifest(metadata, sizes, entries)
