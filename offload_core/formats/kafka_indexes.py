"""The files beside a Kafka ``.log``: offset, time and transaction indexes,
the producer snapshot and the leader-epoch checkpoint text; their
derivation from a ``.log`` alone; and the lookups Kafka answers with them.
Pure.

- ``.index``: entries ``i32 relative offset, i32 position``.
- ``.timeindex``: entries ``i64 timestamp, i32 relative offset``.
- ``.txnindex``: 34-byte entries ``i16 version 0, i64 producer id,
  i64 first offset, i64 last offset, i64 last stable offset`` (aborted
  transactions only).
- producer snapshot: ``i16 version 1, u32 CRC-32C of the rest, i32 count``,
  then 46-byte entries.
- leader-epoch checkpoint: text ``0\\n<count>\\n`` then ``<epoch> <offset>\\n`` lines.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import google_crc32c

from ..errors import FormatError
from .kafka_batches import iter_batches, iter_records
from .kafka_codecs import DEFAULT_DECOMPRESSED_LIMIT
from .kafka_records import BatchHeader

__all__ = [
    "AbortedTxn",
    "BatchLocation",
    "IndexDeriver",
    "IndexEntry",
    "ProducerSnapshotEntry",
    "TimestampAndOffset",
    "TimeIndexEntry",
    "decode_leader_epochs",
    "decode_offset_index",
    "decode_producer_snapshot",
    "decode_time_index",
    "decode_txn_index",
    "derive_indexes",
    "encode_leader_epochs",
    "encode_offset_index",
    "encode_producer_snapshot",
    "encode_time_index",
    "encode_txn_index",
    "epochs_in_range",
    "find_offset_by_timestamp",
    "lookup_offset",
    "lookup_time",
    "translate_offset",
]

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_TXN_ENTRY = struct.Struct(">hqqqq")
_SNAPSHOT_HEAD = struct.Struct(">hIi")
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
_SNAPSHOT_VERSION = 1
_NO_TIMESTAMP = -1


@dataclass(frozen=True)
class IndexEntry:
    """An offset-index entry, with the absolute offset."""

    offset: int
    position: int


@dataclass(frozen=True)
class TimeIndexEntry:
    """A time-index entry, with the absolute offset."""

    timestamp: int
    offset: int


@dataclass(frozen=True)
class AbortedTxn:
    """One aborted transaction: its producer and offsets; ``last_offset``
    is the ABORT marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = 0


@dataclass(frozen=True)
class ProducerSnapshotEntry:
    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


@dataclass(frozen=True)
class BatchLocation:
    """Where the batch holding an offset is: ``translateOffset``'s answer."""

    last_offset: int
    position: int
    size: int


@dataclass(frozen=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None


def _entries(data: bytes, width: int, what: str) -> int:
    if len(data) % width:
        raise FormatError(f"{what} of {len(data)} bytes is not a whole number of {width}-byte entries")
    return len(data) // width


def decode_offset_index(data: bytes, base_offset: int) -> list[IndexEntry]:
    """Entries of a ``.index``; :class:`FormatError` if not whole or not increasing."""
    entries = [
        IndexEntry(base_offset + rel, pos)
        for rel, pos in (_OFFSET_ENTRY.unpack_from(data, i * 8) for i in range(_entries(data, 8, "offset index")))
    ]
    for before, after in zip(entries, entries[1:], strict=False):
        if after.offset <= before.offset or after.position <= before.position:
            raise FormatError(f"offset index entries are not increasing at offset {after.offset}")
    if entries and (entries[0].offset < base_offset or entries[0].position < 0):
        raise FormatError("offset index starts below its segment's base offset or at a negative position")
    return entries


def encode_offset_index(entries: Iterable[IndexEntry], base_offset: int) -> bytes:
    return b"".join(_OFFSET_ENTRY.pack(e.offset - base_offset, e.position) for e in entries)


def decode_time_index(data: bytes, base_offset: int) -> list[TimeIndexEntry]:
    """Entries of a ``.timeindex``; :class:`FormatError` if not whole or not increasing."""
    entries = [
        TimeIndexEntry(ts, base_offset + rel)
        for ts, rel in (_TIME_ENTRY.unpack_from(data, i * 12) for i in range(_entries(data, 12, "time index")))
    ]
    for before, after in zip(entries, entries[1:], strict=False):
        if after.timestamp <= before.timestamp or after.offset < before.offset:
            raise FormatError(f"time index entries are not increasing at timestamp {after.timestamp}")
    return entries


def encode_time_index(entries: Iterable[TimeIndexEntry], base_offset: int) -> bytes:
    return b"".join(_TIME_ENTRY.pack(e.timestamp, e.offset - base_offset) for e in entries)


def decode_txn_index(data: bytes) -> list[AbortedTxn]:
    """Entries of a ``.txnindex``; :class:`FormatError` for a partial entry or an unknown version."""
    out = []
    for i in range(_entries(data, _TXN_ENTRY.size, "transaction index")):
        version, producer, first, last, lso = _TXN_ENTRY.unpack_from(data, i * _TXN_ENTRY.size)
        if version != 0:
            raise FormatError(f"transaction index entry {i} has version {version}; only version 0 is known")
        out.append(AbortedTxn(producer, first, last, lso, version))
    return out


def encode_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    return b"".join(_TXN_ENTRY.pack(e.version, e.producer_id, e.first_offset, e.last_offset,
                                    e.last_stable_offset) for e in entries)  # fmt: skip


def decode_producer_snapshot(data: bytes) -> list[ProducerSnapshotEntry]:
    """Entries of a producer snapshot; :class:`FormatError` for a wrong
    version, count or CRC-32C."""
    if len(data) < _SNAPSHOT_HEAD.size:
        raise FormatError(f"producer snapshot of {len(data)} bytes is shorter than its 10-byte header")
    version, crc, count = _SNAPSHOT_HEAD.unpack_from(data)
    if version != _SNAPSHOT_VERSION:
        raise FormatError(f"producer snapshot has version {version}; only version 1 is known")
    if google_crc32c.value(data[6:]) != crc:
        raise FormatError("producer snapshot fails its CRC-32C: the file is damaged")
    if count < 0 or len(data) != _SNAPSHOT_HEAD.size + count * _SNAPSHOT_ENTRY.size:
        raise FormatError(f"producer snapshot claims {count} entries but holds {len(data)} bytes")
    return [
        ProducerSnapshotEntry(*_SNAPSHOT_ENTRY.unpack_from(data, _SNAPSHOT_HEAD.size + i * _SNAPSHOT_ENTRY.size))
        for i in range(count)
    ]


def encode_producer_snapshot(entries: Sequence[ProducerSnapshotEntry]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(
        _SNAPSHOT_ENTRY.pack(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
                             e.timestamp, e.coordinator_epoch, e.current_txn_first_offset) for e in entries
    )  # fmt: skip
    return struct.pack(">hI", _SNAPSHOT_VERSION, google_crc32c.value(body)) + body


_EPOCH_LINE = re.compile(r"(0|-?[1-9][0-9]*) (0|-?[1-9][0-9]*)")


def decode_leader_epochs(text: bytes) -> list[tuple[int, int]]:
    """``(epoch, start offset)`` pairs of a leader-epoch checkpoint; :class:`FormatError`
    for a wrong version line, count or line."""
    try:
        lines = text.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise FormatError("leader-epoch checkpoint is not UTF-8 text") from None
    if len(lines) < 3 or lines[0] != "0" or lines[-1] != "" or not lines[1].isdigit():
        raise FormatError("leader-epoch checkpoint must start with lines '0' and a count and end with a newline")
    count = int(lines[1])
    body = lines[2:-1]
    if count != len(body):
        raise FormatError(f"leader-epoch checkpoint claims {count} entries but holds {len(body)}")
    out = []
    for line in body:
        if not _EPOCH_LINE.fullmatch(line):
            raise FormatError(f"leader-epoch checkpoint line {line!r} is not '<epoch> <start offset>'")
        epoch, offset = line.split(" ")
        out.append((int(epoch), int(offset)))
    return out


def epochs_in_range(entries: Iterable[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """``LeaderEpochFileCache.epochEntriesInRange``: the ``(epoch, start
    offset)`` entries that apply to offsets ``[start, end)``; the one in
    force at ``start`` is moved to begin there."""
    inside = [(epoch, offset) for epoch, offset in entries if offset < end]
    before = [(epoch, offset) for epoch, offset in inside if offset <= start]
    kept = [(epoch, offset) for epoch, offset in inside if offset > start]
    return [(before[-1][0], start), *kept] if before else kept


def encode_leader_epochs(entries: Iterable[tuple[int, int]]) -> bytes:
    rows = list(entries)
    return ("0\n" + f"{len(rows)}\n" + "".join(f"{epoch} {offset}\n" for epoch, offset in rows)).encode()


@dataclass(frozen=True)
class DerivedIndexes:
    """What Kafka's ``LogSegment.append`` builds while a segment is written."""

    offset_index: list[IndexEntry]
    time_index: list[TimeIndexEntry]
    max_timestamp: int
    next_offset: int


class IndexDeriver:
    """Kafka's ``LogSegment.append`` index rules, fed one batch (one append)
    at a time, so a segment of any size is indexed in constant memory
    (entries aside)."""

    def __init__(self, base_offset: int, *, index_interval_bytes: int = 4096) -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.offset_index: list[IndexEntry] = []
        self.time_index: list[TimeIndexEntry] = []
        self.max_timestamp = _NO_TIMESTAMP
        self.next_offset = base_offset
        self._max_ts_offset = base_offset
        self._since_last = 0

    def add(self, batch: BatchHeader) -> None:
        if batch.max_timestamp > self.max_timestamp:
            self.max_timestamp, self._max_ts_offset = batch.max_timestamp, batch.last_offset
        if self._since_last > self.index_interval_bytes:
            self.offset_index.append(IndexEntry(batch.last_offset, batch.position))
            self._maybe_append_time()
            self._since_last = 0
        self._since_last += batch.size_in_bytes
        self.next_offset = batch.next_offset

    def _maybe_append_time(self) -> None:
        last = self.time_index[-1].timestamp if self.time_index else _NO_TIMESTAMP
        if self.max_timestamp > last:
            self.time_index.append(TimeIndexEntry(self.max_timestamp, self._max_ts_offset))

    def finish(self) -> DerivedIndexes:
        """The indexes as the segment's roll leaves them (one last time-index entry)."""
        self._maybe_append_time()
        return DerivedIndexes(self.offset_index, self.time_index, self.max_timestamp, self.next_offset)


def derive_indexes(log: bytes | memoryview, base_offset: int, *, index_interval_bytes: int = 4096) -> DerivedIndexes:
    """The ``.index`` and ``.timeindex`` entries Kafka writes for ``log``,
    taking each batch as one append (the leader path). Byte-identical to
    Kafka's for such segments; for segments appended several batches at a
    time the entries differ but every lookup stays correct."""
    deriver = IndexDeriver(base_offset, index_interval_bytes=index_interval_bytes)
    for batch in iter_batches(log):
        deriver.add(batch)
    return deriver.finish()


def lookup_offset(index: Sequence[IndexEntry], target: int, base_offset: int) -> IndexEntry:
    """``OffsetIndex.lookup``: the last entry at or below ``target``, else the segment start."""
    found = IndexEntry(base_offset, 0)
    for entry in index:
        if entry.offset > target:
            break
        found = entry
    return found


def lookup_time(index: Sequence[TimeIndexEntry], target: int, base_offset: int) -> TimeIndexEntry:
    """``TimeIndex.lookup``: the last entry at or below ``target``, else ``(-1, base offset)``."""
    found = TimeIndexEntry(_NO_TIMESTAMP, base_offset)
    for entry in index:
        if entry.timestamp > target:
            break
        found = entry
    return found


def translate_offset(log: bytes | memoryview, offset: int, start: int = 0) -> BatchLocation | None:
    """``LogSegment.translateOffset``: the first batch from ``start`` whose
    last offset is at least ``offset``, or ``None``."""
    for batch in iter_batches(log, start):
        if batch.last_offset >= offset:
            return BatchLocation(batch.last_offset, batch.position, batch.size_in_bytes)
    return None


def find_offset_by_timestamp(
    log: bytes | memoryview,
    offset_index: Sequence[IndexEntry],
    time_index: Sequence[TimeIndexEntry],
    timestamp: int,
    base_offset: int,
    starting_offset: int | None = None,
    *,
    limit: int = DEFAULT_DECOMPRESSED_LIMIT,
) -> TimestampAndOffset | None:
    """``LogSegment.findOffsetByTimestamp``: the first record from the time
    index's floor whose timestamp is at least ``timestamp`` (and offset at
    least ``starting_offset``), or ``None``."""
    start_offset = base_offset if starting_offset is None else starting_offset
    floor = lookup_time(time_index, timestamp, base_offset)
    position = lookup_offset(offset_index, max(floor.offset, start_offset), base_offset).position
    for batch in iter_batches(log, position, limit=limit):
        found = first_record_at_or_after(log, batch, timestamp, start_offset, limit=limit)
        if found is not None:
            return found
    return None


def first_record_at_or_after(
    log: bytes | memoryview,
    batch: BatchHeader,
    timestamp: int,
    starting_offset: int,
    *,
    limit: int = DEFAULT_DECOMPRESSED_LIMIT,
) -> TimestampAndOffset | None:
    """Within one batch: the first record with timestamp ≥ ``timestamp`` and
    offset ≥ ``starting_offset`` (batches whose max timestamp is lower are
    skipped unread; the batch is decoded only up to that record)."""
    if batch.max_timestamp < timestamp:
        return None
    whole = memoryview(log)[batch.position : batch.position + batch.size_in_bytes]
    epoch = None if batch.partition_leader_epoch == -1 else batch.partition_leader_epoch
    for record in iter_records(whole, batch, limit=limit):
        if record.timestamp >= timestamp and record.offset >= starting_offset:
            return TimestampAndOffset(record.timestamp, record.offset, epoch)
    return None
