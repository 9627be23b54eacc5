"""What a store alone says about remote Kafka logs: which partitions it
holds, their committed segments (those with a manifest) and leftovers of
copies that never committed. For readers without the metadata manager:
the CLI on another machine, Spark executors."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from ..errors import ConfigError, FormatError
from ..storage import StorageDriver
from .epoch_state import ServedRange, epoch_states, served_ranges
from .layout import MANIFEST_SUFFIX, decode_stored_manifest, parse_name, partition_prefix
from .manifest_bytes import ManifestBytes, read_manifests
from .packed_manifest import PackedManifest, pack_manifest
from .types import UNKNOWN_TOPIC_ID, RemoteLogSegmentMetadata, TopicIdPartition, TopicPartition, check_uuid

__all__ = [
    "PartitionListing",
    "list_partition",
    "list_partitions",
    "one_topic_id",
    "parse_topic_id",
    "resolve_partition",
]

# Stands for a listed segment whose manifest list_partition has read.
_READ = (0, "", 0, 0, 0)

# How the unknown topic id (objects written before topic ids were kept) is named to users.
UNKNOWN_NAME = "unknown"


@dataclass(frozen=True)
class PartitionListing:
    """A partition's committed segments by start offset (every copy, also
    where copies overlap) and the copy attempts without a manifest (in
    progress, failed, or half deleted) and the empty segments earlier
    versions tiered (:func:`.layout.decode_stored_manifest`: they hold no
    offset), both as ``(base offset, segment id, object count, bytes)``.
    The segments' manifests are packed (:mod:`.packed_manifest`): a
    partition may hold every segment of a store."""

    topic_id_partition: TopicIdPartition
    segments: list[PackedManifest]
    uncommitted: list[tuple[int, str, int, int]] = field(default_factory=list)
    legacy_empty: list[tuple[int, str, int, int]] = field(default_factory=list)

    def served(self) -> list[ServedRange]:
        """Every offset with the one segment serving it, as Kafka's
        leader-epoch state decides (:mod:`.epoch_state`): the copies
        replayed in the order they were made (by the time the copy began,
        then the highest leader epoch, as the newer leader's copy is the
        later one)."""
        ordered = sorted((m.metadata for m in self.segments), key=_copy_order)
        return served_ranges(epoch_states(ordered), {s.segment_id: s for s in ordered})


def _copy_order(segment: RemoteLogSegmentMetadata) -> tuple[int, int, str]:
    return segment.event_timestamp_ms, max(segment.segment_leader_epochs), segment.segment_id.id


def list_partitions(driver: StorageDriver, prefix: str = "") -> list[TopicIdPartition]:
    """Every partition (of every topic id) with at least one object of ours under ``prefix``."""
    head = prefix.strip("/")
    found: set[TopicIdPartition] = set()
    for info in driver.list(f"{head}/" if head else ""):
        rest = info.key[len(head) + 1 :] if head else info.key
        directory, slash, name = rest.partition("/")
        if slash and "/" not in name and parse_name(name) is not None:
            try:
                found.add(TopicIdPartition.parse_directory(directory))
            except ValueError:
                continue
    return sorted(found)


def parse_topic_id(text: str) -> str:
    """A topic id as a user gives it: a Kafka Uuid, or ``unknown`` for
    objects written before topic ids were kept. :class:`ConfigError` otherwise."""
    return UNKNOWN_TOPIC_ID if text == UNKNOWN_NAME else check_uuid(text, "topic id")


def topic_id_name(topic_id: str) -> str:
    return topic_id if topic_id != UNKNOWN_TOPIC_ID else UNKNOWN_NAME


def one_topic_id(partitions: list[TopicIdPartition], topic_partition: TopicPartition, option: str) -> str:
    """The topic id ``topic_partition`` has among ``partitions`` (the
    unknown id if none). :class:`ConfigError` naming them and ``option``
    if it has several (a topic deleted and recreated)."""
    found = sorted(p.topic_id for p in partitions if p.topic_partition == topic_partition)
    if len(found) > 1:
        names = ", ".join(topic_id_name(t) for t in found)
        raise ConfigError(f"{topic_partition} has {len(found)} topic ids in the store ({names}): the topic was "
                          f"deleted and recreated; pick one with {option}")  # fmt: skip
    return found[0] if found else UNKNOWN_TOPIC_ID


def resolve_partition(
    driver: StorageDriver, prefix: str, topic_partition: TopicPartition, topic_id: str | None, *, option: str
) -> TopicIdPartition:
    """The partition ``topic_partition`` names in the store: ``topic_id``
    (as :func:`parse_topic_id` reads it) when given, else the one topic id
    it has there (:func:`one_topic_id`, which raises :class:`ConfigError`
    for several)."""
    if topic_id is None:
        topic_id = one_topic_id(list_partitions(driver, prefix), topic_partition, option)
    else:
        topic_id = parse_topic_id(topic_id)
    return TopicIdPartition(topic_id, topic_partition)


def list_partition(
    driver: StorageDriver, prefix: str, topic_id_partition: TopicIdPartition, manifests: ManifestBytes | None = None
) -> PartitionListing:
    """The committed segments and uncommitted attempts of one partition;
    with ``manifests``, a manifest it holds is not read again (see
    :mod:`.manifest_bytes`). Raises :class:`FormatError` naming the key of
    a damaged manifest."""
    base_prefix = partition_prefix(prefix, topic_id_partition)
    # Per copy attempt only its object count, bytes and manifest size (-1: none), not the listed keys: a
    # partition may hold every segment, and its keys held at once cost more than the plan made from it. A key
    # is its name under base_prefix, which parse_name reads back exactly, so each is made again when read.
    attempts: dict[tuple[int, str], list[int]] = {}
    for info in driver.list(base_prefix):
        name = parse_name(info.key[len(base_prefix) :])
        if name is not None:
            seen = attempts.setdefault((name.base_offset, name.segment_id), [0, 0, -1])
            seen[0] += 1
            seen[1] += info.size
            if name.suffix == MANIFEST_SUFFIX:
                seen[2] = info.size
    uncommitted = [(base, segment_id, count, size)
                   for (base, segment_id), (count, size, manifest_size) in sorted(attempts.items())
                   if manifest_size < 0]  # fmt: skip
    manifested = sorted((base, segment_id, count, size, manifest_size)
                        for (base, segment_id), (count, size, manifest_size) in attempts.items()
                        if manifest_size >= 0)  # fmt: skip
    del attempts
    committed = []
    legacy_empty = []

    def manifest_key(base: int, segment_id: str) -> str:
        return f"{base_prefix}{base:020d}-{segment_id}.{MANIFEST_SUFFIX}"

    listed = ((manifest_key(base, segment_id), manifest_size) for base, segment_id, _, _, manifest_size in manifested)
    stored = read_manifests(driver, listed, kept=manifests, group=base_prefix)
    with contextlib.closing(stored):
        for at, data in enumerate(stored):
            base, segment_id, count, size, _ = manifested[at]
            manifested[at] = _READ  # what is listed of a segment goes once its manifest is decoded
            if data is None:
                continue
            key = manifest_key(base, segment_id)
            manifest = decode_stored_manifest(data, key=key, partition=topic_id_partition)
            if manifest is None:
                legacy_empty.append((base, segment_id, count, size))
                continue
            if (manifest.metadata.segment_id.id != segment_id
                    or manifest.metadata.topic_id_partition != topic_id_partition):  # fmt: skip
                raise FormatError(f"{key} describes another segment: the store was edited by hand")
            committed.append(pack_manifest(manifest, key=key))
    committed.sort(key=lambda m: (m.metadata.start_offset, _copy_order(m.metadata)))
    return PartitionListing(topic_id_partition, committed, uncommitted, legacy_empty)
