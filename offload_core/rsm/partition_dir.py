"""A Kafka partition directory (``<topic>-<partition>/``) as the segments a
RemoteStorageManager copies. Reads names only; no segment bytes.

Kafka names every file by a 20-digit offset: ``<base>.log``, ``.index``,
``.timeindex``, ``.txnindex`` (only with aborted transactions) per
segment, and ``<offset>.snapshot`` producer snapshots, the one a rolled
segment needs being named by the next segment's base offset. The segment
with the highest base offset is the active one, still being written by a
live broker. ``partition.metadata`` (Kafka's ``PartitionMetadataFile``:
``version: 0`` and ``topic_id: <Uuid>`` lines) names the topic id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, FormatError, NotFoundError
from ..formats.kafka import ProducerSnapshotEntry, decode_leader_epochs, decode_producer_snapshot, encode_leader_epochs
from .types import UNKNOWN_TOPIC_ID, LogSegmentData, TopicIdPartition, TopicPartition, check_uuid

__all__ = ["LocalSegment", "parse_partition_metadata", "read_partition_dir", "undecided_transaction"]

_OFFSET_FILE = re.compile(r"(\d{20})\.(log|snapshot)")
_FIELD = re.compile(r":\s+")
CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"


@dataclass(frozen=True)
class LocalSegment:
    """One segment of a partition directory; ``next_base_offset`` is
    ``None`` for the active segment."""

    base_offset: int
    next_base_offset: int | None
    data: LogSegmentData

    @property
    def active(self) -> bool:
        return self.next_base_offset is None

    @property
    def next_offset(self) -> int:
        """The offset after the segment, which Kafka's RemoteLogManager makes
        its end offset + 1: the next segment's base offset, or for the
        active segment the log end offset its last producer snapshot is
        named by (a broker writes one there when it stops)."""
        if self.next_base_offset is not None:
            return self.next_base_offset
        return int(self.data.producer_snapshot_index.name[:20])


def parse_partition_metadata(text: str, where: str) -> str:
    """The topic id in the text of a ``partition.metadata`` file, read as
    Kafka's ``PartitionMetadataReadBuffer`` reads it (a version of at least
    0, then the id, each after ``<key>: ``; the zero Uuid is refused).
    :class:`FormatError` naming ``where`` otherwise."""
    lines = text.splitlines()
    try:
        key, version = _FIELD.split(lines[0])
        id_key, topic_id = _FIELD.split(lines[1])
        if key != "version" or id_key != "topic_id" or int(version) < 0 or len(lines) != 2:
            raise ValueError("unexpected lines")
        check_uuid(topic_id, "topic id")
    except (IndexError, ValueError) as exc:
        raise FormatError(f"{where} is not a Kafka partition.metadata file ({exc}): expected the lines "
                          "'version: 0' and 'topic_id: <Uuid>'") from None  # fmt: skip
    if topic_id == UNKNOWN_TOPIC_ID:
        raise FormatError(f"{where} holds the zero topic id, which Kafka never gives a topic")
    return topic_id


def read_partition_dir(path: Path, topic_id: str | None = None) -> tuple[TopicIdPartition, list[LocalSegment]]:
    """The partition a directory holds (with ``topic_id``, or else the one
    its ``partition.metadata`` names) and its segments by base offset.

    Raises :class:`ConfigError` if the directory name is not
    ``<topic>-<partition>``, or if there is neither ``topic_id`` nor a
    ``partition.metadata``; :class:`NotFoundError` for a missing directory
    or a segment without the files a copy needs (its ``.index``,
    ``.timeindex`` or producer snapshot); and :class:`FormatError` for an
    unreadable leader-epoch checkpoint or ``partition.metadata``."""
    if not path.is_dir():
        raise NotFoundError(f"{path} is not a directory: give a Kafka partition directory such as /var/kafka/orders-0")
    try:
        topic_partition = TopicPartition.parse(path.name)
    except ConfigError as exc:
        raise ConfigError(f"{path.name!r} is not a Kafka partition directory name: {exc}") from None
    topic_id_partition = TopicIdPartition(_topic_id(path, topic_id), topic_partition)
    logs: list[int] = []
    snapshots: list[int] = []
    for entry in path.iterdir():
        match = _OFFSET_FILE.fullmatch(entry.name)
        if match:
            (logs if match.group(2) == "log" else snapshots).append(int(match.group(1)))
    logs.sort()
    snapshots.sort()
    epochs = _leader_epochs(path)
    segments = []
    for position, base in enumerate(logs):
        following = logs[position + 1] if position + 1 < len(logs) else None
        segments.append(LocalSegment(base, following, _segment_data(path, base, following, snapshots, epochs)))
    return topic_id_partition, segments


def undecided_transaction(segments: list[LocalSegment]) -> ProducerSnapshotEntry | None:
    """The transaction a partition directory's ``segments`` (as
    :func:`read_partition_dir` returns them) cannot prove decided, that
    began first: an open one in the directory's newest producer snapshot,
    the last segment's (``None`` when there is none, or no segment). Its
    first offset is the last stable offset the directory proves: Kafka
    tiers no offset from there on, since a read_committed reader must not
    be served past it. :class:`FormatError` naming the snapshot if it does
    not decode."""
    if not segments:
        return None
    newest = segments[-1].data.producer_snapshot_index
    try:
        entries = decode_producer_snapshot(newest.read_bytes())
    except FormatError as exc:
        raise FormatError(f"producer snapshot {newest}: {exc}") from None
    return min((e for e in entries if e.current_txn_first_offset >= 0), key=lambda e: e.current_txn_first_offset,
               default=None)  # fmt: skip


def _topic_id(path: Path, given: str | None) -> str:
    if given is not None:
        return check_uuid(given, "topic id")
    metadata = path / PARTITION_METADATA
    if not metadata.exists():
        raise ConfigError(f"{path} has no {PARTITION_METADATA} (Kafka writes one since 2.8) to take the topic id "
                          "from: give the topic id (offload kafka copy --topic-id, or topic_id= in Python; "
                          "kafka-topics.sh --describe prints it)")  # fmt: skip
    return parse_partition_metadata(metadata.read_text("utf-8", "replace"), str(metadata))


def _leader_epochs(path: Path) -> list[tuple[int, int]]:
    checkpoint = path / CHECKPOINT
    if not checkpoint.exists():
        return []
    try:
        return decode_leader_epochs(checkpoint.read_bytes())
    except FormatError as exc:
        raise FormatError(f"{checkpoint}: {exc}") from None


def _segment_data(
    path: Path, base: int, following: int | None, snapshots: list[int], epochs: list[tuple[int, int]]
) -> LogSegmentData:
    name = f"{base:020d}"
    for suffix in ("index", "timeindex"):
        if not (path / f"{name}.{suffix}").exists():
            raise NotFoundError(f"segment {name}.log in {path} has no .{suffix}: Kafka writes one per segment")
    if following is not None:
        snapshot = following
        if snapshot not in snapshots:
            raise NotFoundError(
                f"segment {name}.log in {path} has no producer snapshot {snapshot:020d}.snapshot "
                "(Kafka writes it when the segment rolls)"
            )
    else:
        later = [offset for offset in snapshots if offset >= base]
        if not later:
            raise NotFoundError(
                f"active segment {name}.log in {path} has no producer snapshot after it: stop the broker "
                "cleanly (it writes one at shutdown) before copying the active segment"
            )
        snapshot = later[-1]
    txn = path / f"{name}.txnindex"
    # The epochs the segment can hold: those that started before its end
    # (RemoteLogManager hands the cache up to the next segment's base).
    end = following if following is not None else snapshot
    return LogSegmentData(
        log_segment=path / f"{name}.log",
        offset_index=path / f"{name}.index",
        time_index=path / f"{name}.timeindex",
        transaction_index=txn if txn.exists() else None,
        producer_snapshot_index=path / f"{snapshot:020d}.snapshot",
        leader_epoch_index=encode_leader_epochs([(e, o) for e, o in epochs if o < end]),
    )
