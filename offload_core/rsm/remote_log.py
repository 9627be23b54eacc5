"""What a store alone says about remote Kafka logs: which partitions it
holds, their committed segments (those with a manifest) and leftovers of
copies that never committed. For readers without the metadata manager:
the CLI on another machine, Spark executors."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..errors import FormatError, NotFoundError
from ..storage import StorageDriver
from .layout import MANIFEST_SUFFIX, SegmentManifest, decode_manifest, parse_name, partition_prefix
from .types import TopicPartition

__all__ = ["PartitionListing", "list_partition", "list_partitions"]


@dataclass(frozen=True)
class PartitionListing:
    """A partition's committed segments by start offset (the newest copy
    where a segment was copied twice) and the copy attempts without a
    manifest (in progress, failed, or half deleted), as ``(base offset,
    segment id, object count, bytes)``."""

    topic_partition: TopicPartition
    segments: list[SegmentManifest]
    uncommitted: list[tuple[int, str, int, int]] = field(default_factory=list)


def list_partitions(driver: StorageDriver, prefix: str = "") -> list[TopicPartition]:
    """Every partition with at least one object of ours under ``prefix``."""
    head = prefix.strip("/")
    found: set[TopicPartition] = set()
    for info in driver.list(f"{head}/" if head else ""):
        rest = info.key[len(head) + 1 :] if head else info.key
        directory, slash, name = rest.partition("/")
        if slash and "/" not in name and parse_name(name) is not None:
            try:
                found.add(TopicPartition.parse(directory))
            except ValueError:
                continue
    return sorted(found)


def list_partition(driver: StorageDriver, prefix: str, topic_partition: TopicPartition) -> PartitionListing:
    """The committed segments and uncommitted attempts of one partition.
    Raises :class:`FormatError` naming the key of a damaged manifest."""
    base_prefix = partition_prefix(prefix, topic_partition)
    attempts: dict[tuple[int, str], list[tuple[str, int, str]]] = defaultdict(list)
    for info in driver.list(base_prefix):
        name = parse_name(info.key[len(base_prefix) :])
        if name is not None:
            attempts[(name.base_offset, name.segment_id)].append((name.suffix, info.size, info.key))
    newest: dict[int, SegmentManifest] = {}
    uncommitted = []
    for (base, segment_id), objects in sorted(attempts.items()):
        manifest_key = next((key for suffix, _, key in objects if suffix == MANIFEST_SUFFIX), None)
        if manifest_key is None:
            uncommitted.append((base, segment_id, len(objects), sum(size for _, size, _ in objects)))
            continue
        try:
            manifest = decode_manifest(driver.read(manifest_key), key=manifest_key)
        except NotFoundError:
            continue  # deleted since the listing
        if manifest.metadata.segment_id.id != segment_id or manifest.metadata.topic_partition != topic_partition:
            raise FormatError(f"{manifest_key} describes another segment: the store was edited by hand")
        kept = newest.get(base)
        if kept is None or manifest.metadata.event_timestamp_ms > kept.metadata.event_timestamp_ms:
            newest[base] = manifest
    return PartitionListing(topic_partition, [newest[base] for base in sorted(newest)], uncommitted)
