"""Where a ``kafka-remote`` read starts and ends in each remote log: Spark's
starting and ending options resolved against what the store holds (its
log start and end, and its time indexes for timestamps), and the check for
offsets that were lost to retention before they were read."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ..errors import ConfigError, NotFoundError
from ..rsm.aiven.storage import AivenRemoteStorage
from ..rsm.log_reader import RemoteLogReader
from ..rsm.manifest_bytes import ManifestBytes
from ..rsm.remote_log import list_partitions, one_topic_id
from ..rsm.storage_manager import RemoteStorageManager
from ..rsm.types import TopicIdPartition
from ..storage import StorageDriver
from .kafka_options import EARLIEST, LATEST, KafkaReadOptions, OffsetBound

__all__ = ["available_end", "checked_start", "selected_logs", "selected_partitions", "starting_offset", "ending_offset"]

_LOG = logging.getLogger(__name__)


def selected_logs(
    parsed: KafkaReadOptions, driver: StorageDriver, manifests: ManifestBytes | None = None
) -> Iterator[RemoteLogReader]:
    """A reader for each remote log the options select, in topic-partition
    order; with ``manifests``, one they hold is not read again (see
    :mod:`offload_core.rsm.manifest_bytes`). :class:`ConfigError` for a
    topic with several topic ids in the store and no ``topicId`` option to
    pick one."""
    aiven = _aiven_storage(parsed, driver, manifests)
    for tp in _selected(parsed, driver, aiven):
        # The CLI's reader: where copies overlap, each offset is read from
        # the one segment serving it; read_committed reads the producer
        # snapshot and .txnindex objects through fetch_index's size check.
        source = aiven or RemoteStorageManager(driver, prefix=parsed.prefix, manifest_bytes=manifests)
        yield RemoteLogReader(source, tp)


def selected_partitions(parsed: KafkaReadOptions, driver: StorageDriver) -> list[TopicIdPartition]:
    """The remote logs :func:`selected_logs` reads, without a reader each
    (in our layout no manifest is read). :class:`ConfigError` as there."""
    return list(_selected(parsed, driver, _aiven_storage(parsed, driver, None)))


def _aiven_storage(
    parsed: KafkaReadOptions, driver: StorageDriver, manifests: ManifestBytes | None
) -> AivenRemoteStorage | None:
    if parsed.aiven is None:
        return None
    # Only the selected partitions' manifests are read: a store may hold many topics under its prefix.
    return AivenRemoteStorage(driver, prefix=parsed.prefix, private_keys=parsed.aiven.private_keys,
                              manifest_bytes=manifests, wanted=parsed.selection.wants)  # fmt: skip


def _selected(
    parsed: KafkaReadOptions, driver: StorageDriver, aiven: AivenRemoteStorage | None
) -> Iterator[TopicIdPartition]:
    listed = aiven.listing.partitions() if aiven is not None else list_partitions(driver, parsed.prefix)
    for tp in listed:
        if not parsed.selection.wants(tp.topic, tp.partition):
            continue
        if parsed.topic_ids is None:
            one_topic_id(listed, tp.topic_partition, '.option("topicId", ID)')
        elif tp.topic_id not in parsed.topic_ids:
            continue
        yield tp


def starting_offset(parsed: KafkaReadOptions, reader: RemoteLogReader) -> int:
    """The first offset to read of this log. :class:`ConfigError` for a
    starting timestamp no record reaches (unless
    ``startingOffsetsByTimestampStrategy=latest``); :class:`NotFoundError`
    for a starting offset retention removed, with ``failOnDataLoss``."""
    first = _resolve(parsed, parsed.starting, reader, starting=True)
    return checked_start(parsed, reader, first) if parsed.starting.kind == "offsets" else first


def ending_offset(parsed: KafkaReadOptions, reader: RemoteLogReader) -> int:
    """One past the last offset to read of this log (a timestamp no record
    reaches stands for the log's end, as in Spark)."""
    return _resolve(parsed, parsed.ending, reader, starting=False)


def available_end(parsed: KafkaReadOptions, reader: RemoteLogReader) -> int:
    """One past the last offset a read may return now: the remote log's end,
    or with read_committed its last stable offset if that is lower."""
    end = reader.log_end_offset or 0
    stable = reader.last_stable_offset if parsed.read_committed else None
    return end if stable is None else min(end, stable)


def checked_start(parsed: KafkaReadOptions, reader: RemoteLogReader, first: int) -> int:
    """``first``, or the log's start if the offsets before it are gone
    (deleted by retention) and ``failOnDataLoss`` is false (logged).
    :class:`NotFoundError` naming the partition and the lost offsets when
    it is true."""
    start = reader.log_start_offset
    if start is None or first >= start:
        return first
    lost = (f"{reader.topic_id_partition.topic_partition}: offsets {first} to {start - 1} are no longer in the store "
            f"(its remote log starts at {start})")  # fmt: skip
    if parsed.fail_on_data_loss:
        raise NotFoundError(f"{lost}; set failOnDataLoss=false to read from offset {start} on")
    _LOG.warning("kafka-remote: %s; skipped, as failOnDataLoss=false", lost)
    return start


def _resolve(parsed: KafkaReadOptions, bound: OffsetBound, reader: RemoteLogReader, *, starting: bool) -> int:
    log_start, log_end = reader.log_start_offset or 0, reader.log_end_offset or 0
    if bound.kind in ("earliest", "latest"):
        return log_start if bound.kind == "earliest" else log_end
    tp = reader.topic_id_partition
    given = bound.given(tp.topic, tp.partition)
    if given is None:
        return log_start if starting else log_end
    if bound.kind == "offsets":
        return log_start if given == EARLIEST else log_end if given == LATEST else given
    found = reader.offset_for_timestamp(given, max_decompressed_bytes=parsed.max_decompressed_bytes)
    if found is not None:
        return found.offset
    if starting and not parsed.starting_timestamp_fallback_latest:
        raise ConfigError(f"no record of {tp.topic_partition} in the store has a timestamp at or after {given}: "
                          "give an earlier starting timestamp, or startingOffsetsByTimestampStrategy=latest to "
                          "start that partition at its end")  # fmt: skip
    return log_end
