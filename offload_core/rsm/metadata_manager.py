"""KIP-405's RemoteLogMetadataManager on the embedded metadata store.

Each segment is one versioned record (JSON) at
``/kafka-remote-log/<topic>-<partition>-<topic id>/segments/<segment id>``
(no ``-<topic id>`` for the unknown id, as records written before topic
ids were kept are), each
partition's delete state one record beside them; every change is a
compare-and-set on the record's version, so two processes (a copier and a
cleaner) never lose each other's updates. DELETE_SEGMENT_FINISHED removes
the record, as Kafka's cache forgets them.

Lookups answer as Kafka's ``RemoteLogMetadataCache`` does, from its
per-epoch state (:mod:`.epoch_state`): each segment's record keeps the
sequence number its copy finished with (a per-partition counter), so the
state is rebuilt by replaying the finished copies in order, and where
copies overlap each offset is served by one of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import AlreadyExistsError, ConflictError, FormatError, NotFoundError, StateError
from ..managed_ledger.metadata_store import MetadataStore, SqliteMetadataStore
from .copy_lease import give_back, take
from .epoch_state import EpochState, ServedRange, epoch_states, served_ranges
from .types import (
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
    TopicIdPartition,
)

__all__ = ["RemoteLogMetadataManager"]

_ROOT = "/kafka-remote-log"
_FINISHED = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
_CAS_ATTEMPTS = 64


def _partition_path(tp: TopicIdPartition) -> str:
    return f"{_ROOT}/{tp.directory_name}"


def _segment_path(segment_id: RemoteLogSegmentId) -> str:
    return f"{_partition_path(segment_id.topic_id_partition)}/segments/{segment_id.id}"


def _encode(meta: RemoteLogSegmentMetadata, finished_seq: int | None) -> bytes:
    body: dict[str, Any] = {
        "finished_seq": finished_seq,
        "start_offset": meta.start_offset,
        "end_offset": meta.end_offset,
        "max_timestamp_ms": meta.max_timestamp_ms,
        "broker_id": meta.broker_id,
        "event_timestamp_ms": meta.event_timestamp_ms,
        "segment_size_in_bytes": meta.segment_size_in_bytes,
        "segment_leader_epochs": sorted(meta.segment_leader_epochs.items()),
        "state": meta.state.name,
        "custom_metadata": meta.custom_metadata.hex() if meta.custom_metadata is not None else None,
    }
    return json.dumps(body).encode()


def _finished_seq(raw: bytes) -> int | None:
    """The sequence number the record's copy finished with (``None``: never
    finished, or recorded before sequence numbers were kept)."""
    value = json.loads(raw).get("finished_seq")
    return None if value is None else int(value)


def _decode(segment_id: RemoteLogSegmentId, raw: bytes) -> RemoteLogSegmentMetadata | None:
    """The record's metadata; ``None`` for an empty segment earlier versions
    recorded (``end_offset = start_offset - 1``, no leader epochs, which
    :class:`RemoteLogSegmentMetadata` now refuses): it holds no offset.
    :class:`FormatError` for a damaged record."""
    try:
        body = json.loads(raw)
        if body["end_offset"] == body["start_offset"] - 1 and not body["segment_leader_epochs"]:
            return None
        custom = body["custom_metadata"]
        return RemoteLogSegmentMetadata(
            segment_id,
            start_offset=body["start_offset"],
            end_offset=body["end_offset"],
            max_timestamp_ms=body["max_timestamp_ms"],
            broker_id=body["broker_id"],
            event_timestamp_ms=body["event_timestamp_ms"],
            segment_size_in_bytes=body["segment_size_in_bytes"],
            segment_leader_epochs={int(e): int(o) for e, o in body["segment_leader_epochs"]},
            state=RemoteLogSegmentState[body["state"]],
            custom_metadata=bytes.fromhex(custom) if custom is not None else None,
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise FormatError(
            f"remote log metadata of segment {segment_id.id} of {segment_id.topic_id_partition} is damaged ({exc})"
        ) from None


class RemoteLogMetadataManager:
    """Segment and partition-delete states of remote logs, in a
    :class:`MetadataStore` (a SQLite file path opens the embedded one; the
    manager then owns and closes it)."""

    def __init__(self, store: MetadataStore | str | Path) -> None:
        self._owns_store = isinstance(store, str | Path)
        self._store: MetadataStore = SqliteMetadataStore(store) if isinstance(store, str | Path) else store

    def close(self) -> None:
        if self._owns_store:
            self._store.close()

    def __enter__(self) -> RemoteLogMetadataManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def add_remote_log_segment_metadata(self, metadata: RemoteLogSegmentMetadata) -> None:
        """Record a new copy attempt. It must be in COPY_SEGMENT_STARTED
        (:class:`StateError` otherwise) and its id new
        (:class:`AlreadyExistsError`)."""
        if metadata.state is not RemoteLogSegmentState.COPY_SEGMENT_STARTED:
            raise StateError(
                f"segment {metadata.segment_id.id} of {metadata.topic_id_partition} is added in {metadata.state.name}; "
                "a new segment starts in COPY_SEGMENT_STARTED"
            )
        try:
            self._store.create(_segment_path(metadata.segment_id), _encode(metadata, None))
        except AlreadyExistsError:
            raise AlreadyExistsError(
                f"segment id {metadata.segment_id.id} of {metadata.topic_id_partition} is already recorded: "
                "every copy attempt needs a fresh id (RemoteLogSegmentId.generate)"
            ) from None

    def update_remote_log_segment_state(
        self,
        segment_id: RemoteLogSegmentId,
        state: RemoteLogSegmentState,
        *,
        event_timestamp_ms: int,
        broker_id: int,
    ) -> RemoteLogSegmentMetadata:
        """Move a segment to ``state``, compare-and-set; the same state again
        is a harmless retry. Raises :class:`NotFoundError` for an unknown
        segment and :class:`StateError` for an illegal move."""
        path = _segment_path(segment_id)
        for _ in range(_CAS_ATTEMPTS):
            record = self._store.get(path)
            if record is None:
                if state is RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
                    raise NotFoundError(
                        f"segment {segment_id.id} of {segment_id.topic_id_partition} is already deleted"
                    )
                raise NotFoundError(f"segment {segment_id.id} of {segment_id.topic_id_partition} was never recorded")
            current = _decode(segment_id, record.value)
            if current is None:
                raise NotFoundError(f"segment {segment_id.id} of {segment_id.topic_id_partition} is an empty segment "
                                    "an earlier version recorded: it holds no offset")  # fmt: skip
            updated = current.with_state(state, event_timestamp_ms=event_timestamp_ms, broker_id=broker_id)
            sequence = _finished_seq(record.value)
            if state is _FINISHED and current.state is not _FINISHED:
                sequence = self._next_sequence(segment_id.topic_id_partition)
            try:
                if state is RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
                    self._store.delete(path, record.version)
                else:
                    self._store.set(path, _encode(updated, sequence), record.version)
                if state is _FINISHED:
                    self._raise_highest(updated)
                return updated
            except ConflictError:
                continue
        raise ConflictError(f"segment {segment_id.id}: {_CAS_ATTEMPTS} concurrent updates in a row; try again")

    def segment(self, segment_id: RemoteLogSegmentId) -> RemoteLogSegmentMetadata | None:
        """A segment in any recorded state, or ``None`` (also for an empty
        segment an earlier version recorded)."""
        record = self._store.get(_segment_path(segment_id))
        return None if record is None else _decode(segment_id, record.value)

    def list_remote_log_segments(
        self, topic_id_partition: TopicIdPartition, leader_epoch: int | None = None
    ) -> list[RemoteLogSegmentMetadata]:
        """Every recorded segment of the partition by start offset (any state
        but deleted); with ``leader_epoch``, those holding that epoch, in
        every state but deleted, as Kafka's ``listRemoteLogSegments(epoch)``
        lists them: copies still in COPY_SEGMENT_STARTED or
        DELETE_SEGMENT_STARTED are there for cleanups to retry."""
        found = list(self._segments(topic_id_partition))
        if leader_epoch is not None:
            found = [s for s in found if leader_epoch in s.segment_leader_epochs]
        return sorted(found, key=lambda s: (s.start_offset, s.end_offset, s.segment_id.id))

    def _segments(self, topic_id_partition: TopicIdPartition) -> Iterator[RemoteLogSegmentMetadata]:
        for segment, _ in self._records(topic_id_partition):
            yield segment

    def _records(self, topic_id_partition: TopicIdPartition) -> Iterator[tuple[RemoteLogSegmentMetadata, int | None]]:
        prefix = f"{_partition_path(topic_id_partition)}/segments/"
        for path in self._store.children(prefix):
            record = self._store.get(path)
            if record is not None:
                segment_id = RemoteLogSegmentId(topic_id_partition, path[len(prefix) :])
                segment = _decode(segment_id, record.value)
                if segment is not None:
                    yield segment, _finished_seq(record.value)

    def _next_sequence(self, topic_id_partition: TopicIdPartition) -> int:
        path = f"{_partition_path(topic_id_partition)}/finish-sequence"
        for _ in range(_CAS_ATTEMPTS):
            record = self._store.get(path)
            try:
                if record is None:
                    self._store.create(path, b"1")
                    return 1
                following = int(record.value) + 1
                self._store.set(path, str(following).encode(), record.version)
                return following
            except (ConflictError, AlreadyExistsError):
                continue
        raise ConflictError(f"{topic_id_partition}: {_CAS_ATTEMPTS} concurrent copies finished in a row; try again")

    def _epoch_states(
        self, topic_id_partition: TopicIdPartition
    ) -> tuple[dict[int, EpochState], dict[RemoteLogSegmentId, RemoteLogSegmentMetadata]]:
        finished: list[tuple[int, int, str, RemoteLogSegmentMetadata]] = []
        unfinished = []
        for segment, sequence in self._records(topic_id_partition):
            if sequence is None and segment.state is not _FINISHED:
                unfinished.append(segment)
            else:
                # Copies finished before sequence numbers were kept come first, by time.
                order = -1 if sequence is None else sequence
                finished.append((order, segment.event_timestamp_ms, segment.segment_id.id, segment))
        ordered = [segment for *_, segment in sorted(finished, key=lambda row: row[:3])]
        states = epoch_states(ordered, unfinished)
        return states, {s.segment_id: s for s in [*ordered, *unfinished]}

    def served_ranges(self, topic_id_partition: TopicIdPartition) -> list[ServedRange]:
        """Every copied offset of the partition with the one segment serving
        it (see :func:`.epoch_state.served_ranges`), in offset order."""
        return served_ranges(*self._epoch_states(topic_id_partition))

    def remote_log_segment_metadata(
        self, topic_id_partition: TopicIdPartition, leader_epoch: int, offset: int
    ) -> RemoteLogSegmentMetadata | None:
        """The copied segment serving ``offset`` in ``leader_epoch``, as
        Kafka's ``remoteLogSegmentMetadata`` finds it: the one mapped at the
        greatest start offset at or before ``offset`` in the epoch, if the
        epoch reaches ``offset`` in it; else ``None``."""
        states, segments = self._epoch_states(topic_id_partition)
        state = states.get(leader_epoch)
        found = state.floor(offset) if state is not None else None
        if found is None:
            return None
        segment = segments[found]
        end = segment.epoch_end_offset(leader_epoch)
        return segment if end is not None and offset <= end else None

    def highest_offset_for_epoch(self, topic_id_partition: TopicIdPartition, leader_epoch: int) -> int | None:
        """The highest offset of ``leader_epoch`` ever copied (a copy that
        reached COPY_SEGMENT_FINISHED), or ``None``. As in Kafka, it never
        decreases: deleting segments does not lower it."""
        states, _ = self._epoch_states(topic_id_partition)
        state = states.get(leader_epoch)
        highest = [h for h in (self._highest_offsets(topic_id_partition).get(leader_epoch),
                               state.highest if state is not None else None) if h is not None]  # fmt: skip
        return max(highest, default=None)

    def _highest_offsets(self, topic_id_partition: TopicIdPartition) -> dict[int, int]:
        record = self._store.get(f"{_partition_path(topic_id_partition)}/highest-offsets")
        return {} if record is None else {int(e): int(o) for e, o in json.loads(record.value).items()}

    def _raise_highest(self, segment: RemoteLogSegmentMetadata) -> None:
        """Record the segment's end in each of its epochs, where it is the highest yet."""
        path = f"{_partition_path(segment.topic_id_partition)}/highest-offsets"
        for _ in range(_CAS_ATTEMPTS):
            record = self._store.get(path)
            highest = {} if record is None else json.loads(record.value)
            for epoch in segment.segment_leader_epochs:
                end = segment.epoch_end_offset(epoch)
                if end is not None and end > highest.get(str(epoch), -1):
                    highest[str(epoch)] = end
            try:
                if record is None:
                    self._store.create(path, json.dumps(highest).encode())
                else:
                    self._store.set(path, json.dumps(highest).encode(), record.version)
                return
            except (ConflictError, AlreadyExistsError):
                continue
        raise ConflictError(f"{segment.topic_id_partition}: {_CAS_ATTEMPTS} concurrent copies finished in a row")

    def take_copy_lease(self, topic_id_partition: TopicIdPartition, owner: str, now_ms: int) -> None:
        """Take or renew the partition's copier lease for ``owner``
        (:mod:`.copy_lease`): :class:`ConflictError` when another live
        copier holds it."""
        take(self._store, f"{_partition_path(topic_id_partition)}/copier", owner, now_ms, str(topic_id_partition))

    def give_back_copy_lease(self, topic_id_partition: TopicIdPartition, owner: str) -> None:
        give_back(self._store, f"{_partition_path(topic_id_partition)}/copier", owner)

    def remote_log_size(self, topic_id_partition: TopicIdPartition, leader_epoch: int | None = None) -> int:
        """Bytes of the copied segments (holding ``leader_epoch``, if given)."""
        segments = self.list_remote_log_segments(topic_id_partition, leader_epoch)
        return sum(s.segment_size_in_bytes for s in segments if s.state is _FINISHED)

    def put_remote_partition_delete_state(
        self, topic_id_partition: TopicIdPartition, state: RemotePartitionDeleteState
    ) -> None:
        """Move the partition's delete state MARKED -> STARTED -> FINISHED
        (the same state again is a retry); :class:`StateError` otherwise."""
        path = f"{_partition_path(topic_id_partition)}/delete-state"
        for _ in range(_CAS_ATTEMPTS):
            record = self._store.get(path)
            try:
                if record is None:
                    if state is not RemotePartitionDeleteState.DELETE_PARTITION_MARKED:
                        raise StateError(f"deleting {topic_id_partition}: {state.name} before DELETE_PARTITION_MARKED")
                    self._store.create(path, state.name.encode())
                    return
                current = RemotePartitionDeleteState[record.value.decode()]
                current.check_move(state, f"deleting {topic_id_partition}")
                self._store.set(path, state.name.encode(), record.version)
                return
            except (ConflictError, AlreadyExistsError):
                continue
        raise ConflictError(
            f"{topic_id_partition}: {_CAS_ATTEMPTS} concurrent delete-state updates in a row; try again"
        )

    def remote_partition_delete_state(self, topic_id_partition: TopicIdPartition) -> RemotePartitionDeleteState | None:
        record = self._store.get(f"{_partition_path(topic_id_partition)}/delete-state")
        return None if record is None else RemotePartitionDeleteState[record.value.decode()]
