"""What a store alone says about the segments Aiven's plugin tiered, with
no remote log metadata manager: one listing of a key prefix, grouped per
topic, topic id, partition and segment.

The plugin uploads ``.log``, then ``.indexes``, then ``.rsm-manifest``, and
deletes a segment's objects together. A segment with all three is
complete; one without a manifest is an upload in progress or failed, or a
delete under way; one with a manifest but without its ``.log`` or
``.indexes`` is being deleted. Only complete segments serve offsets. A
retried copy is a new segment id at the same start offset; a new leader's
copies overlap the old one's. Which one serves each offset is decided as
Kafka's leader-epoch state does (:mod:`..epoch_state`), from the
``remoteLogSegmentMetadata`` each manifest holds: the leader-epoch lineage
first, then the newest ``eventTimestampMs``, so no offset is served twice.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError, FormatError, NotFoundError
from ...storage import StorageDriver
from ..epoch_state import ServedRange, epoch_states, served_ranges
from ..manifest_bytes import ManifestBytes, read_manifests
from ..types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
    TopicPartition,
)
from .chunk_index import stored_size
from .keys import ObjectKey, parse_key
from .manifest import SegmentManifest, decode_manifest

__all__ = ["AivenListing", "AivenSegment", "Leftover", "list_store"]


@dataclass(frozen=True)
class AivenSegment:
    """A complete segment: its manifest (and the bytes it was decoded
    from) and the metadata the broker gave the plugin."""

    key: ObjectKey
    manifest: SegmentManifest
    manifest_bytes: bytes
    metadata: RemoteLogSegmentMetadata
    stored_bytes: int


@dataclass(frozen=True)
class Leftover:
    """A segment that is not complete: what of it is in the store, and why."""

    key: ObjectKey
    suffixes: tuple[str, ...]
    stored_bytes: int
    state: str


@dataclass
class AivenListing:
    """Every complete segment and leftover under one prefix, by partition."""

    segments: dict[TopicIdPartition, list[AivenSegment]] = field(default_factory=dict)
    leftovers: dict[TopicIdPartition, list[Leftover]] = field(default_factory=dict)

    def partitions(self) -> list[TopicIdPartition]:
        return sorted(set(self.segments) | set(self.leftovers))

    def served(self, partition: TopicIdPartition) -> list[ServedRange]:
        """Every offset of the partition with the one segment serving it."""
        ordered = sorted((s.metadata for s in self.segments.get(partition, [])), key=_copy_order)
        return served_ranges(epoch_states(ordered), {s.segment_id: s for s in ordered})

    def topic_ids(self, topic_partition: TopicPartition) -> list[str]:
        return sorted(p.topic_id for p in self.partitions() if p.topic_partition == topic_partition)


def _copy_order(segment: RemoteLogSegmentMetadata) -> tuple[int, int, str]:
    return segment.event_timestamp_ms, max(segment.segment_leader_epochs), segment.segment_id.id


_UNFINISHED = "incomplete (no manifest: uploading, failed, or being deleted)"
_DELETING = "incomplete (manifest without its {missing}: being deleted)"


def list_store(
    driver: StorageDriver,
    prefix: str = "",
    manifests: ManifestBytes | None = None,
    wanted: Callable[[str, int], bool] | None = None,
) -> AivenListing:
    """The segments under ``prefix`` (the plugin's ``key.prefix``, verbatim);
    with ``wanted`` (a topic and a partition: true to list it), those of
    the partitions it wants only, the others' manifests left unread.
    Manifests are read and checked (with ``manifests``, one it holds is not
    read again: see :mod:`..manifest_bytes`); :class:`FormatError` naming
    the key of one the plugin would not read or that describes another
    segment."""
    objects: dict[tuple[str, str, int, int, str], dict[str, tuple[ObjectKey, int]]] = defaultdict(dict)
    for info in driver.list(prefix):
        parsed = parse_key(info.key, prefix)
        if parsed is not None and (wanted is None or wanted(parsed.topic, parsed.partition)):
            group = (parsed.topic, parsed.topic_id, parsed.partition, parsed.start_offset, parsed.segment_id)
            objects[group][parsed.suffix] = (parsed, info.size)
    listing = AivenListing()
    complete = []
    for found in objects.values():
        first = next(iter(found.values()))[0]
        partition = TopicIdPartition(first.topic_id, TopicPartition(first.topic, first.partition))
        size = sum(size for _, size in found.values())
        suffixes = tuple(sorted(found))
        if "rsm-manifest" not in found:
            listing.leftovers.setdefault(partition, []).append(Leftover(first, suffixes, size, _UNFINISHED))
            continue
        missing = [suffix for suffix in ("log", "indexes") if suffix not in found]
        if missing:
            state = _DELETING.format(missing=" and ".join(f".{m}" for m in missing))
            listing.leftovers.setdefault(partition, []).append(Leftover(first, suffixes, size, state))
            continue
        complete.append((partition, found, size))

    listed = [(found["rsm-manifest"][0].key, found["rsm-manifest"][1]) for _, found, _ in complete]
    with contextlib.closing(read_manifests(driver, listed, kept=manifests, group=prefix)) as stored:
        for (partition, found, size), raw in zip(complete, stored, strict=True):
            if raw is None:
                continue
            manifest_key = found["rsm-manifest"][0]
            manifest = decode_manifest(raw, manifest_key.key)
            try:
                _check_sizes(driver, manifest, found["log"], found["indexes"])
            except NotFoundError:
                continue  # deleted since the listing
            metadata = segment_metadata(manifest.remote_log_segment_metadata, manifest_key, manifest)
            segment = AivenSegment(manifest_key, manifest, raw, metadata, size)
            listing.segments.setdefault(partition, []).append(segment)
    for segments in listing.segments.values():
        segments.sort(key=lambda s: (s.metadata.start_offset, _copy_order(s.metadata)))
    for leftovers in listing.leftovers.values():
        leftovers.sort(key=lambda left: (left.key.start_offset, left.key.segment_id))
    return listing


def _check_sizes(
    driver: StorageDriver, manifest: SegmentManifest, log: tuple[ObjectKey, int], indexes: tuple[ObjectKey, int]
) -> None:
    """:class:`FormatError` naming the object whose size is not what the
    manifest's chunk index (``.log``) or index places (``.indexes``) add up
    to; :class:`NotFoundError` for one deleted since the listing."""
    expected = stored_size(manifest.chunk_index, log[0].key)
    size = _read_size(driver, log, expected)
    if size != expected:
        raise FormatError(f"{log[0].key!r} is {size} bytes but its manifest's chunk index adds up to {expected}: "
                          "the object was cut, grown or replaced")  # fmt: skip
    places = [place for place in manifest.indexes.values() if place is not None]
    end = max((place.position + place.size for place in places), default=0)
    size = _read_size(driver, indexes, end)
    if size != end:
        raise FormatError(f"{indexes[0].key!r} is {size} bytes but its manifest places indexes up to byte "
                          f"{end}: the object was cut, grown or replaced")  # fmt: skip


def _read_size(driver: StorageDriver, listed: tuple[ObjectKey, int], expected: int) -> int:
    """The listed object's size as a read sees it: its listed size when that
    is ``expected``, else its stat's. A listing below chunk transforms
    (Spark's planning: :func:`offload_core.spark.planning_reads.open_planning_driver`)
    gives an object written through them at its stored size, and only the
    stat, through them, tells its size as read."""
    key, size = listed
    return size if size == expected else driver.stat(key.key).size


def segment_metadata(fields: Any, key: ObjectKey, manifest: SegmentManifest) -> RemoteLogSegmentMetadata:
    """The segment's metadata from its manifest's ``remoteLogSegmentMetadata``
    (the broker's, as the plugin wrote it). :class:`FormatError` naming the
    manifest when it is absent, malformed, or names another segment than
    its key does."""
    where = f"manifest {key.key!r}"
    if not isinstance(fields, Mapping):
        raise FormatError(f"{where} holds no remoteLogSegmentMetadata (written by an older plugin?): without "
                          "it the segment's end offset and leader epochs are unknown")  # fmt: skip
    try:
        segment_id = fields["remoteLogSegmentId"]
        topic_id_partition = segment_id["topicIdPartition"]
        topic_partition = topic_id_partition["topicPartition"]
        named = (topic_partition["topic"], topic_partition["partition"], topic_id_partition["topicId"],
                 segment_id["id"], fields["startOffset"])  # fmt: skip
        epochs = {int(epoch): _integer(offset) for epoch, offset in fields["segmentLeaderEpochs"].items()}
        partition = TopicIdPartition(named[2], TopicPartition(named[0], named[1]))
        metadata = RemoteLogSegmentMetadata(
            RemoteLogSegmentId(partition, named[3]),
            start_offset=_integer(fields["startOffset"]),
            end_offset=_integer(fields["endOffset"]),
            max_timestamp_ms=_integer(fields["maxTimestampMs"]),
            broker_id=_integer(fields["brokerId"]),
            event_timestamp_ms=_integer(fields["eventTimestampMs"]),
            segment_size_in_bytes=manifest.chunk_index.original_file_size,
            segment_leader_epochs=dict(sorted(epochs.items(), key=lambda item: item[1])),
            state=RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
        )
    except (KeyError, TypeError, ValueError, AttributeError, ConfigError) as error:
        raise FormatError(
            f"{where}: remoteLogSegmentMetadata does not read ({type(error).__name__}: {error})"
        ) from None
    if named != (key.topic, key.partition, key.topic_id, key.segment_id, key.start_offset):
        raise FormatError(f"{where} describes another segment ({named}): the store was edited by hand")
    return metadata


def _integer(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{value!r} is not an integer")
    return value
