"""The nouns of KIP-405, as Kafka's ``org.apache.kafka.server.log.remote.storage``
package names them, in Python. Pure.

A remote segment is named, as Kafka names it, by its topic id, its
topic-partition and a segment id (random UUIDs in Kafka's base64 form: one
per topic incarnation, one per copy attempt), and described by
:class:`RemoteLogSegmentMetadata`: offsets, max timestamp, size, the leader
epochs it spans and its lifecycle state. A topic deleted and recreated
under the same name has another topic id: it is another topic.
"""

from __future__ import annotations

import base64
import enum
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import ConfigError, StateError

__all__ = [
    "IndexType",
    "LogSegmentData",
    "RemoteLogIndexEntry",
    "RemoteLogSegmentId",
    "RemoteLogSegmentMetadata",
    "RemoteLogSegmentState",
    "RemotePartitionDeleteState",
    "UNKNOWN_TOPIC_ID",
    "TopicIdPartition",
    "TopicPartition",
    "check_uuid",
    "new_segment_id",
]

_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


@dataclass(frozen=True, order=True, slots=True)
class TopicPartition:
    """A Kafka topic-partition. The topic must be a legal Kafka topic name
    (``[a-zA-Z0-9._-]``, at most 249 characters, not ``.`` or ``..``), so it
    can never escape the key prefix it is stored under: :class:`ConfigError`
    otherwise."""

    topic: str
    partition: int

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not _LEGAL_TOPIC.fullmatch(self.topic) or self.topic in (".", ".."):
            raise ConfigError(
                f"topic {self.topic!r} is not a legal Kafka topic name: use 1-249 characters from "
                "[a-zA-Z0-9._-], and not '.' or '..'"
            )
        if not isinstance(self.partition, int) or isinstance(self.partition, bool) or self.partition < 0:
            raise ConfigError(f"partition {self.partition!r} of topic {self.topic!r} must be an integer >= 0")

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TopicPartition:
        """``"orders-3"`` -> ``TopicPartition("orders", 3)`` (the last ``-`` splits,
        as in Kafka's partition directory names). :class:`ConfigError` if malformed."""
        topic, sep, partition = text.rpartition("-")
        if not sep or not partition.isdigit() or not partition.isascii():
            raise ConfigError(f"{text!r} is not TOPIC-PARTITION (e.g. orders-0)")
        return cls(topic, int(partition))


_UUID = re.compile(r"[A-Za-z0-9_-]{21}[AQgw]")

# Kafka's Uuid.ZERO_UUID, which it reserves for "no id": the topic id of
# objects and records written before we kept topic ids.
UNKNOWN_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"


def check_uuid(text: str, what: str) -> str:
    """``text`` if it is a Kafka ``Uuid`` in its string form (22 characters
    of URL-safe base64 holding 16 bytes); :class:`ConfigError` naming
    ``what`` otherwise."""
    if not isinstance(text, str) or not _UUID.fullmatch(text):
        raise ConfigError(f"{what} {text!r} is not a Kafka Uuid (22 characters of URL-safe base64, "
                          "as Kafka prints it, e.g. in partition.metadata)")  # fmt: skip
    return text


@dataclass(frozen=True, order=True, slots=True)
class TopicIdPartition:
    """A topic-partition of one topic incarnation (Kafka's ``TopicIdPartition``).
    ``topic_id`` is :data:`UNKNOWN_TOPIC_ID` for what was written before
    topic ids were kept. :class:`ConfigError` for a malformed id."""

    topic_id: str
    topic_partition: TopicPartition

    def __post_init__(self) -> None:
        check_uuid(self.topic_id, f"topic id of {self.topic_partition}")

    @property
    def known(self) -> bool:
        return self.topic_id != UNKNOWN_TOPIC_ID

    @property
    def topic(self) -> str:
        return self.topic_partition.topic

    @property
    def partition(self) -> int:
        return self.topic_partition.partition

    @property
    def directory_name(self) -> str:
        """``<topic>-<partition>-<topic id>`` (the directory of Kafka's
        ``LocalTieredStorage``), or ``<topic>-<partition>`` for an unknown id."""
        return f"{self.topic_partition}-{self.topic_id}" if self.known else str(self.topic_partition)

    @classmethod
    def parse_directory(cls, name: str) -> TopicIdPartition:
        """The inverse of :attr:`directory_name`. A name ending in a digit
        has no id (a Kafka Uuid never ends in one). :class:`ConfigError` if
        malformed."""
        if _UUID.fullmatch(name[-22:]) and name[-23:-22] == "-":
            return cls(name[-22:], TopicPartition.parse(name[:-23]))
        return cls(UNKNOWN_TOPIC_ID, TopicPartition.parse(name))

    def __str__(self) -> str:
        # Kafka's TopicIdPartition.toString, where there is an id.
        return f"{self.topic_id}:{self.topic_partition}" if self.known else str(self.topic_partition)


def new_segment_id() -> str:
    """A fresh segment id in Kafka's ``Uuid.toString`` form: 22 characters of
    URL-safe base64, never starting with ``-`` (Kafka re-draws those)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


_SEGMENT_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}")


@dataclass(frozen=True, order=True, slots=True)
class RemoteLogSegmentId:
    """One copy attempt of one segment: its topic id and partition, and a
    unique id (Kafka's ``RemoteLogSegmentId``)."""

    topic_id_partition: TopicIdPartition
    id: str

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not _SEGMENT_ID.fullmatch(self.id):
            raise ConfigError(f"segment id {self.id!r} is not a Kafka Uuid (22 characters of URL-safe base64)")

    @property
    def topic_partition(self) -> TopicPartition:
        return self.topic_id_partition.topic_partition

    @classmethod
    def generate(cls, topic_id_partition: TopicIdPartition) -> RemoteLogSegmentId:
        return cls(topic_id_partition, new_segment_id())


class RemoteLogSegmentState(enum.Enum):
    """A segment's lifecycle, with Kafka's legal transitions."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3

    def can_become(self, target: RemoteLogSegmentState) -> bool:
        return target in _SEGMENT_MOVES[self]

    def check_move(self, target: RemoteLogSegmentState, what: str) -> None:
        """:class:`StateError` if ``self -> target`` is not a legal move (same state is)."""
        if not self.can_become(target):
            raise StateError(f"{what}: cannot move from {self.name} to {target.name}")


_S = RemoteLogSegmentState
_SEGMENT_MOVES = {
    _S.COPY_SEGMENT_STARTED: {_S.COPY_SEGMENT_STARTED, _S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED},
    _S.COPY_SEGMENT_FINISHED: {_S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED},
    _S.DELETE_SEGMENT_STARTED: {_S.DELETE_SEGMENT_STARTED, _S.DELETE_SEGMENT_FINISHED},
    _S.DELETE_SEGMENT_FINISHED: {_S.DELETE_SEGMENT_FINISHED},
}


class RemotePartitionDeleteState(enum.Enum):
    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2

    def check_move(self, target: RemotePartitionDeleteState, what: str) -> None:
        """:class:`StateError` unless ``target`` is this state (a retry) or
        the next; after DELETE_PARTITION_FINISHED a deletion may start
        again at DELETE_PARTITION_MARKED (Kafka forgets a finished one)."""
        again = self is RemotePartitionDeleteState.DELETE_PARTITION_FINISHED and target.value == 0
        if target.value not in (self.value, self.value + 1) and not again:
            raise StateError(f"{what}: cannot move from {self.name} to {target.name}")


class IndexType(enum.Enum):
    """What :meth:`RemoteStorageManager.fetch_index` can return."""

    OFFSET = "index"
    TIMESTAMP = "timeindex"
    PRODUCER_SNAPSHOT = "snapshot"
    TRANSACTION = "txnindex"
    LEADER_EPOCH = "leader_epoch_checkpoint"

    @property
    def suffix(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadata:
    """A remote segment as the metadata manager records it. Offsets are
    inclusive; ``segment_leader_epochs`` maps each leader epoch in the
    segment to its first offset there (ascending).

    Checked as Kafka's constructor checks it: :class:`ConfigError` naming the
    field for a negative ``start_offset``, an ``end_offset`` below it (a
    remote segment holds at least one offset), no leader epoch, or a
    negative size."""

    segment_id: RemoteLogSegmentId
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    segment_leader_epochs: Mapping[int, int]
    state: RemoteLogSegmentState = RemoteLogSegmentState.COPY_SEGMENT_STARTED
    custom_metadata: bytes | None = None

    def __post_init__(self) -> None:
        what = f"metadata of segment {self.segment_id.id} of {self.segment_id.topic_id_partition}"
        if self.start_offset < 0:
            raise ConfigError(f"{what}: start_offset {self.start_offset} is negative")
        if self.end_offset < self.start_offset:
            raise ConfigError(f"{what}: end_offset {self.end_offset} is below start_offset {self.start_offset} "
                              "(a remote segment holds at least one offset)")  # fmt: skip
        if not self.segment_leader_epochs:
            raise ConfigError(f"{what}: segment_leader_epochs is empty; give at least the epoch the segment "
                              "starts in (Kafka requires one)")  # fmt: skip
        if self.segment_size_in_bytes < 0:
            raise ConfigError(f"{what}: segment_size_in_bytes {self.segment_size_in_bytes} is negative")

    @property
    def topic_partition(self) -> TopicPartition:
        return self.segment_id.topic_partition

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return self.segment_id.topic_id_partition

    def with_state(
        self, state: RemoteLogSegmentState, *, event_timestamp_ms: int, broker_id: int
    ) -> RemoteLogSegmentMetadata:
        """A copy in ``state``; :class:`StateError` for an illegal move."""
        self.state.check_move(state, f"segment {self.segment_id.id} of {self.topic_partition}")
        return replace(self, state=state, event_timestamp_ms=event_timestamp_ms, broker_id=broker_id)

    def epoch_end_offset(self, epoch: int) -> int | None:
        """The last offset of ``epoch`` in this segment, or ``None`` if absent."""
        if epoch not in self.segment_leader_epochs:
            return None
        later = [start for e, start in self.segment_leader_epochs.items() if e > epoch]
        return min(later) - 1 if later else self.end_offset


@dataclass(frozen=True, slots=True)
class LogSegmentData:
    """The local files of one rolled segment, as Kafka hands them to
    ``copyLogSegmentData``; ``transaction_index`` is ``None`` when the segment
    has no aborted transactions (Kafka writes no ``.txnindex`` then)."""

    log_segment: Path
    offset_index: Path
    time_index: Path
    transaction_index: Path | None
    producer_snapshot_index: Path
    leader_epoch_index: bytes


@dataclass(frozen=True, slots=True)
class RemoteLogIndexEntry:
    """A run of whole batches of a remote segment (the seed interface's
    index entry): offsets and batch timestamps it covers, and where its bytes
    are in the remote ``.log``. Reading one costs one ranged GET."""

    segment_id: RemoteLogSegmentId
    segment_start_offset: int
    first_offset: int
    last_offset: int
    first_timestamp: int
    last_timestamp: int
    position: int
    length: int
