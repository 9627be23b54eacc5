"""Remote indexes checked before they are trusted: a damaged or altered
index must be an error naming it, never records skipped or bytes served.

Every index is fetched at the size its segment's manifest recorded
(:meth:`RemoteStorageManager.fetch_index` refuses another) and must decode.
An offset index must also fit its log: offsets within the segment,
positions inside the ``.log``, and each entry at the start of a batch whose
base offset is at most the offset it names. (Kafka writes, per append, the
append's last offset and the position where the append starts; an append
may hold several batches, so the entry's offset may lie past the first
batch's end, never before its start.) A read checks the entry it starts
from; :func:`checked_index` (``offload kafka fetch-index``) checks them all.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import FormatError
from ..formats import kafka
from .log_batches import read_batches
from .segment_source import IndexedSegments
from .types import IndexType, RemoteLogSegmentMetadata

__all__ = ["check_entry_batch", "check_offset_entries", "checked_index", "decoded_offset_index",
           "entry_error"]  # fmt: skip


def entry_error(key: str, entry: kafka.IndexEntry, problem: str) -> FormatError:
    return FormatError(
        f"remote offset index {key}: entry (offset {entry.offset}, position {entry.position}) {problem}: "
        "the index (or its log) was altered or damaged; copy the segment again"
    )


def check_offset_entries(
    entries: Sequence[kafka.IndexEntry], segment: RemoteLogSegmentMetadata, log_size: int, key: str
) -> None:
    """:class:`FormatError` naming ``key`` for an entry outside the
    segment's offsets or past the end of its log."""
    for entry in entries:
        if entry.offset > segment.end_offset or entry.position >= log_size:
            raise entry_error(key, entry, f"lies outside its segment (offsets {segment.start_offset}.."
                                          f"{segment.end_offset}, {log_size} bytes of log)")  # fmt: skip


def decoded_offset_index(
    raw: bytes, segment: RemoteLogSegmentMetadata, log_size: int, key: str
) -> list[kafka.IndexEntry]:
    """The entries of the offset index ``raw`` (object ``key``), checked to
    lie within the segment and its log of ``log_size`` bytes; a
    :class:`FormatError` naming ``key`` for one that does not decode or fit."""
    try:
        entries = kafka.decode_offset_index(raw, segment.start_offset)
    except FormatError as exc:
        raise FormatError(f"remote offset index {key}: {exc}") from None
    check_offset_entries(entries, segment, log_size, key)
    return entries


def check_entry_batch(key: str, entry: kafka.IndexEntry, batch: kafka.BatchHeader) -> None:
    """:class:`FormatError` naming ``key`` unless ``batch``, the one found at
    the entry's position, starts no later than the offset the entry names."""
    if batch.base_offset > entry.offset:
        raise entry_error(key, entry, f"points at the batch of offsets {batch.base_offset}..{batch.last_offset}, "
                                      "past the offset it names")  # fmt: skip


def checked_index(rsm: IndexedSegments, segment: RemoteLogSegmentMetadata, index_type: IndexType) -> bytes:
    """The bytes of a remote index, once they are known good: at their
    recorded size, decoding as their type, and (offset index) every entry
    checked against the log, which is read once. Raises :class:`FormatError`
    naming the object otherwise, and what ``fetch_index`` raises."""
    raw = rsm.fetch_index(segment, index_type).read()
    key = rsm.index_key(segment, index_type)
    try:
        if index_type is IndexType.OFFSET:
            _check_against_log(rsm, segment, kafka.decode_offset_index(raw, segment.start_offset), key)
        elif index_type is IndexType.TIMESTAMP:
            for entry in kafka.decode_time_index(raw, segment.start_offset):
                if entry.offset > segment.end_offset:
                    raise FormatError(f"entry (timestamp {entry.timestamp}, offset {entry.offset}) lies past "
                                      f"its segment's end offset {segment.end_offset}")  # fmt: skip
        elif index_type is IndexType.TRANSACTION:
            kafka.decode_txn_index(raw)
        elif index_type is IndexType.PRODUCER_SNAPSHOT:
            kafka.decode_producer_snapshot(raw)
        else:
            kafka.decode_leader_epochs(raw)
    except FormatError as exc:
        message = str(exc)
        raise FormatError(message if message.startswith("remote offset index") else f"{key}: {message}") from None
    return raw


def _check_against_log(
    rsm: IndexedSegments, segment: RemoteLogSegmentMetadata, entries: list[kafka.IndexEntry], key: str
) -> None:
    size = rsm.log_size(segment)
    check_offset_entries(entries, segment, size, key)
    if not entries:
        return
    pending = iter(entries)
    entry = next(pending, None)
    with rsm.fetch_log_segment(segment, 0) as stream:
        for batch, _ in read_batches(stream, 0, size):
            while entry is not None and entry.position <= batch.position:
                if entry.position < batch.position:
                    raise entry_error(key, entry, "does not point at the start of a batch")
                check_entry_batch(key, entry, batch)
                entry = next(pending, None)
            if entry is None:
                return
    if entry is not None:  # past the last batch's start, inside it: no batch begins there
        raise entry_error(key, entry, "does not point at the start of a batch")
