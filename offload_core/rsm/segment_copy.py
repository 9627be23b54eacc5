"""Uploading one segment's files, all or nothing.

The ``.log`` streams up in read-buffer-sized parts while every batch is
CRC-checked and grouped into index entries on the way (bounded memory for
any segment size); the index files, producer snapshot and leader-epoch
bytes follow, each checked to decode first; the manifest goes last and
commits the segment. Any failure (damaged input, the store, a cancel)
deletes every object of this attempt before the error is raised.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from ..errors import ConfigError, CopyCancelledError, FormatError, OffloadError, StateError
from ..formats import kafka
from ..storage import StorageDriver
from .batch_scan import BatchScanner, IndexEntryBuilder, LogSummary
from .layout import LOG_SUFFIX, MANIFEST_SUFFIX, SegmentManifest, encode_manifest, partition_prefix, segment_key
from .types import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
)

__all__ = ["checked_index_file", "checked_leader_epochs", "new_segment_metadata", "scan_log_file", "upload_segment"]


def scan_log_file(path: Path, base_offset: int, *, limit: int = kafka.DEFAULT_DECOMPRESSED_LIMIT) -> LogSummary:
    """The offsets, max timestamp and leader epochs of a ``.log`` from its
    batch headers alone (one small read per v2 batch, payloads skipped; a
    magic 0/1 entry is read whole, a compressed one decompressed up to
    ``limit`` bytes). Raises :class:`FormatError` for a damaged or
    truncated header, or a wrapper expanding past ``limit``."""
    summary = LogSummary(base_offset)
    size = os.path.getsize(path)
    with open(path, "rb") as log:
        position = 0
        while position < size:
            log.seek(position)
            head = log.read(kafka.BATCH_HEADER_LENGTH)
            span = kafka.header_span(head)  # a magic 0/1 entry is read whole
            if position + span > size:
                raise FormatError(f"{path}: the batch at byte {position} runs past the end of the file ({size} bytes)")
            if span > len(head):
                head += log.read(span - len(head))
            header = replace(kafka.decode_batch_header(head[:span], limit=limit), position=position)
            if position + header.size_in_bytes > size:
                raise FormatError(f"{path}: the batch at byte {position} runs past the end of the file ({size} bytes)")
            summary.add(header)
            position += header.size_in_bytes
    return summary


def new_segment_metadata(
    topic_id_partition: TopicIdPartition,
    segment: LogSegmentData,
    *,
    next_offset: int | None,
    broker_id: int,
    event_timestamp_ms: int,
    limit: int = kafka.DEFAULT_DECOMPRESSED_LIMIT,
) -> RemoteLogSegmentMetadata:
    """The metadata of a new copy (a fresh segment id) of one rolled
    segment, from its batch headers (:func:`scan_log_file`): its end offset
    is ``next_offset - 1``, as Kafka's RemoteLogManager gives it (without
    it, the last batch's offset; that one if it is later). Raises
    :class:`ConfigError` for a file not named as Kafka names segments,
    :class:`StateError` for one without records and what
    :func:`scan_log_file` raises."""
    name = segment.log_segment.name
    if len(name) != 24 or not name[:20].isdigit() or not name.endswith(".log"):
        raise ConfigError(f"{segment.log_segment} is not a Kafka segment file (<20-digit base offset>.log)")
    base = int(name[:20])
    summary = scan_log_file(segment.log_segment, base, limit=limit)
    if summary.batch_count == 0:
        raise StateError(f"{segment.log_segment} holds no records: an empty segment has nothing to tier")
    end = summary.last_offset if next_offset is None else max(summary.last_offset, next_offset - 1)
    epochs = _segment_epochs(summary.leader_epochs, segment.leader_epoch_index, base, end)
    return RemoteLogSegmentMetadata(
        RemoteLogSegmentId.generate(topic_id_partition), start_offset=base, end_offset=end,
        max_timestamp_ms=summary.max_timestamp, broker_id=broker_id, event_timestamp_ms=event_timestamp_ms,
        segment_size_in_bytes=os.path.getsize(segment.log_segment), segment_leader_epochs=epochs,
    )  # fmt: skip


def _segment_epochs(carried: dict[int, int], checkpoint: bytes, base: int, end: int) -> dict[int, int]:
    """The segment's leader epochs (epoch -> first offset). Batches older
    than KIP-101 (magic 0/1, or epoch -1) carry none: their offsets take the
    checkpoint's, as Kafka's RemoteLogManager takes a segment's epochs from
    its leader-epoch cache; a segment of such batches followed by newer
    ones (a topic upgraded mid-segment) needs both, or its first offsets
    belong to no epoch and are never served."""
    first_carried = min(carried.values(), default=end + 1)
    if first_carried <= base:
        return dict(carried)
    epochs = dict(carried)
    for epoch, offset in kafka.epochs_in_range(kafka.decode_leader_epochs(checkpoint), base, first_carried):
        epochs[epoch] = min(offset, epochs.get(epoch, offset))
    if min(epochs.values(), default=base) > base:  # the checkpoint has nothing before: the first epoch begins at base
        epochs[min(epochs, key=lambda e: epochs[e])] = base
    return epochs


def _log_parts(
    path: Path, scanner: BatchScanner, buffer_size: int, cancelled: Callable[[], bool], what: str
) -> Iterator[bytes]:
    with open(path, "rb") as log:
        while chunk := log.read(buffer_size):
            if cancelled():
                raise CopyCancelledError(f"copy of {what} was cancelled; its partial objects are removed")
            scanner.feed(chunk)
            yield chunk
    scanner.finish()


def checked_index_file(path: Path, index_type: IndexType, base_offset: int) -> bytes:
    """The bytes of the index file ``path``, once they decode as
    ``index_type``; :class:`FormatError` naming the file otherwise."""
    data = path.read_bytes()
    try:
        if index_type is IndexType.OFFSET:
            kafka.decode_offset_index(data, base_offset)
        elif index_type is IndexType.TIMESTAMP:
            kafka.decode_time_index(data, base_offset)
        elif index_type is IndexType.TRANSACTION:
            kafka.decode_txn_index(data)
        elif index_type is IndexType.PRODUCER_SNAPSHOT:
            kafka.decode_producer_snapshot(data)
    except FormatError as exc:
        raise FormatError(
            f"{path}: {exc} (an index still preallocated by a running broker has a zero-filled tail: "
            "stop the broker cleanly first)"
        ) from None
    return data


def upload_segment(
    driver: StorageDriver,
    prefix: str,
    metadata: RemoteLogSegmentMetadata,
    data: LogSegmentData,
    *,
    buffer_size: int,
    index_entry_bytes: int,
    cancelled: Callable[[], bool] = lambda: False,
    limit: int = kafka.DEFAULT_DECOMPRESSED_LIMIT,
) -> SegmentManifest:
    """Upload ``data`` as the segment ``metadata`` describes and commit it
    with its manifest. Raises :class:`FormatError` if the files are damaged
    or disagree with ``metadata`` (offsets beyond its end, another size),
    :class:`CopyCancelledError` when ``cancelled()`` turns true, and what the
    driver raises; in every case no object of this attempt remains."""
    segment_id = metadata.segment_id
    base = metadata.start_offset
    what = f"segment {base:020d} of {metadata.topic_id_partition} (id {segment_id.id})"
    try:
        builder = IndexEntryBuilder(segment_id, base, index_entry_bytes)
        summary = LogSummary(base)

        def on_batch(batch: kafka.BatchHeader) -> None:
            summary.add(batch)
            builder.add(batch)

        scanner = BatchScanner(on_batch, log_size=os.path.getsize(data.log_segment), limit=limit)
        parts = _log_parts(data.log_segment, scanner, buffer_size, cancelled, what)
        sizes = {LOG_SUFFIX: driver.write(segment_key(prefix, segment_id, base, LOG_SUFFIX), parts, metadata={}).size}
        _check_agrees(metadata, summary, sizes[LOG_SUFFIX], what)
        files: list[tuple[IndexType, bytes]] = [
            (IndexType.OFFSET, checked_index_file(data.offset_index, IndexType.OFFSET, base)),
            (IndexType.TIMESTAMP, checked_index_file(data.time_index, IndexType.TIMESTAMP, base)),
            (
                IndexType.PRODUCER_SNAPSHOT,
                checked_index_file(data.producer_snapshot_index, IndexType.PRODUCER_SNAPSHOT, base),
            ),  # fmt: skip
            (IndexType.LEADER_EPOCH, checked_leader_epochs(data.leader_epoch_index, what)),
        ]
        if data.transaction_index is not None:
            txn = checked_index_file(data.transaction_index, IndexType.TRANSACTION, base)
            files.append((IndexType.TRANSACTION, txn))
        for index_type, content in files:
            if cancelled():
                raise CopyCancelledError(f"copy of {what} was cancelled; its partial objects are removed")
            key = segment_key(prefix, segment_id, base, index_type.suffix)
            sizes[index_type.suffix] = driver.write(key, [content], metadata={}).size
        finished = replace(metadata, state=RemoteLogSegmentState.COPY_SEGMENT_FINISHED)
        manifest = SegmentManifest(finished, sizes, tuple(builder.finish()))
        driver.write(segment_key(prefix, segment_id, base, MANIFEST_SUFFIX), [encode_manifest(manifest)], metadata={})
        return manifest
    except BaseException:
        # Best effort: if the store is down too, the leftovers have no
        # manifest, so no reader sees them, and deleting the segment later
        # removes them.
        with contextlib.suppress(OffloadError, OSError):
            remove_attempt(driver, prefix, metadata)
        raise


def checked_leader_epochs(data: bytes, what: str) -> bytes:
    """``data``, once it decodes as a leader-epoch checkpoint;
    :class:`FormatError` naming ``what`` otherwise."""
    try:
        kafka.decode_leader_epochs(data)
    except FormatError as exc:
        raise FormatError(f"leader-epoch bytes of {what}: {exc}") from None
    return data


def _check_agrees(metadata: RemoteLogSegmentMetadata, summary: LogSummary, size: int, what: str) -> None:
    if size != metadata.segment_size_in_bytes:
        raise FormatError(f"{what}: the .log has {size} bytes but its metadata says {metadata.segment_size_in_bytes}")
    if summary.last_offset > metadata.end_offset:
        raise FormatError(
            f"{what}: the .log holds offsets up to {summary.last_offset}, past the end offset "
            f"{metadata.end_offset} its metadata gives"
        )


def remove_attempt(driver: StorageDriver, prefix: str, metadata: RemoteLogSegmentMetadata) -> None:
    """Delete every object of one copy attempt, manifest first (idempotent)."""
    segment_id = metadata.segment_id
    base = metadata.start_offset
    driver.delete(segment_key(prefix, segment_id, base, MANIFEST_SUFFIX))
    stem = f"{partition_prefix(prefix, segment_id.topic_id_partition)}{base:020d}-{segment_id.id}."
    driver.delete([info.key for info in driver.list(stem)])
