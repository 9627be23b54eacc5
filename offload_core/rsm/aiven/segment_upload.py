"""Uploading segments as Aiven's plugin does, through any storage driver.

One segment's objects go up in the plugin's order: ``.log`` (streamed a
buffer at a time, every batch CRC-checked on the way), ``.indexes``, and
the manifest last, so a listing never sees a manifest whose data is not
there yet; any failure removes what the attempt wrote (manifest first),
as the plugin does. A killed copy leaves at most data without a
manifest, which no reader serves.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from Cryptodome.Random import get_random_bytes

from ...errors import FormatError, OffloadError
from ...formats import kafka
from ...storage import StorageDriver
from ..batch_scan import BatchScanner
from ..segment_copy import checked_index_file, checked_leader_epochs
from ..settings import DEFAULT_BUFFER_SIZE
from ..types import IndexType, LogSegmentData, RemoteLogSegmentMetadata, TopicIdPartition
from .custom_metadata import encode_custom_metadata
from .keys import parse_key
from .manifest import IndexKind, decode_manifest, encode_manifest
from .segment_writer import (
    AivenWriteSettings,
    LogEncoder,
    RandomBytes,
    encode_indexes,
    main_path,
    segment_key,
    segment_manifest,
    segment_transform,
)

__all__ = ["copied_segments", "upload_aiven_segment"]


def upload_aiven_segment(
    driver: StorageDriver,
    settings: AivenWriteSettings,
    metadata: RemoteLogSegmentMetadata,
    data: LogSegmentData,
    *,
    buffer_size: int = DEFAULT_BUFFER_SIZE,
    limit: int = kafka.DEFAULT_DECOMPRESSED_LIMIT,
    random_bytes: RandomBytes = get_random_bytes,
) -> bytes | None:
    """Write ``data`` as the plugin's ``copyLogSegmentData`` would for
    ``metadata`` under ``settings``, and return the custom metadata it
    would return (None when ``settings`` names no fields). Raises
    :class:`FormatError` for a damaged batch or index, or a ``.log`` of
    another size than ``metadata`` says; :class:`ConfigError` for a bad
    public key; and what the driver raises. In every case no object of
    this attempt remains (best effort, if the store still answers)."""
    keys = {suffix: segment_key(settings.key_prefix, metadata, suffix) for suffix in ("log", "indexes", "rsm-manifest")}
    what = f"segment {metadata.start_offset:020d} of {metadata.topic_id_partition} (id {metadata.segment_id.id})"
    try:
        compression = settings.compression and not (
            settings.compression_heuristic and _compressed_or_unreadable(data.log_segment, limit)
        )
        transform = segment_transform(compression, settings.encryption is not None, random_bytes)
        encoder = LogEncoder(transform, settings.chunk_size, random_bytes)
        log_size = os.path.getsize(data.log_segment)
        scanner = BatchScanner(lambda _batch: None, log_size=log_size, limit=limit)
        parts = _stored_log(data.log_segment, encoder, scanner, buffer_size)
        sizes = {"log": driver.write(keys["log"].key, parts, metadata={}).size}
        if encoder.chunk_index.original_file_size != metadata.segment_size_in_bytes:
            raise FormatError(f"{what}: the .log has {encoder.chunk_index.original_file_size} bytes but its "
                              f"metadata says {metadata.segment_size_in_bytes}")  # fmt: skip
        base = metadata.start_offset
        txn = data.transaction_index
        indexes = {
            IndexKind.OFFSET: checked_index_file(data.offset_index, IndexType.OFFSET, base),
            IndexKind.TIMESTAMP: checked_index_file(data.time_index, IndexType.TIMESTAMP, base),
            IndexKind.PRODUCER_SNAPSHOT: checked_index_file(
                data.producer_snapshot_index, IndexType.PRODUCER_SNAPSHOT, base
            ),
            IndexKind.LEADER_EPOCH: checked_leader_epochs(data.leader_epoch_index, what),
            IndexKind.TRANSACTION: None if txn is None else checked_index_file(txn, IndexType.TRANSACTION, base),
        }
        stored_indexes, places = encode_indexes(indexes, transform, random_bytes)
        sizes["indexes"] = driver.write(keys["indexes"].key, [stored_indexes], metadata={}).size
        manifest = segment_manifest(metadata, encoder.chunk_index, places, transform, settings.encryption)
        sizes["rsm-manifest"] = driver.write(keys["rsm-manifest"].key, [encode_manifest(manifest)], metadata={}).size
    except BaseException:
        # The manifest first (a segment without one is a leftover, never read); each delete on its own, so
        # one that fails leaves the others still tried.
        for name in ("rsm-manifest", "log", "indexes"):
            with contextlib.suppress(OffloadError, OSError):
                driver.delete(keys[name].key)
        raise
    return encode_custom_metadata(settings.custom_metadata_fields, remote_size=sum(sizes.values()),
                                  prefix=settings.key_prefix, object_key=main_path(keys["log"]))  # fmt: skip


def copied_segments(driver: StorageDriver, prefix: str, topic_id_partition: TopicIdPartition) -> set[tuple[int, int]]:
    """The (start offset, ``.log`` size) of every segment of the partition
    with a manifest under ``prefix``: the copies a re-run skips. Raises
    :class:`FormatError` naming a manifest that does not decode."""
    tp = topic_id_partition.topic_partition
    listed = driver.list(f"{prefix}{tp.topic}-{topic_id_partition.topic_id}/{tp.partition}/")
    found = set()
    for info in listed:
        key = parse_key(info.key, prefix)
        if key is not None and key.suffix == "rsm-manifest":
            manifest = decode_manifest(driver.read(info.key), info.key)
            found.add((key.start_offset, manifest.chunk_index.original_file_size))
    return found


def _compressed_or_unreadable(path: Path, limit: int) -> bool:
    """Whether the first batch of ``path`` is compressed or does not read:
    the plugin's ``compression.heuristic.enabled`` stores such a segment
    uncompressed (a damaged one then fails the copy's CRC checks)."""
    with open(path, "rb") as log:
        head = log.read(kafka.BATCH_PREFIX_LENGTH)
        try:
            head += log.read(kafka.header_span(head) - len(head))
            return kafka.decode_batch_header(head, limit=limit).compression != kafka.Compression.NONE
        except FormatError:
            return True


def _stored_log(path: Path, encoder: LogEncoder, scanner: BatchScanner, buffer_size: int) -> Iterator[bytes]:
    with open(path, "rb") as log:
        while piece := log.read(buffer_size):
            scanner.feed(piece)
            yield from encoder.feed(piece)
    scanner.finish()
    yield encoder.finish()
