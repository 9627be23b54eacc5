"""Reading PIP-76 segments back: the index, one ledger's entries by id, or
every entry in order. Sizes are checked from a stat before anything is
read, as for v1 objects, so a crafted object cannot make a reader allocate
more than the limits allow."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from ...errors import FormatError, NotFoundError
from ...formats import entry_offsets
from ...formats import pulsar_v1 as v1
from ...formats import pulsar_v2 as v2
from ...formats.entry_offsets import EntryOffsets
from ...model import Entry, ObjectInfo
from ...retry import RetryPolicy, call_with_retries
from ...storage import StorageDriver
from ..reading.block_tables import SegmentLedgerTable, check_entry_offsets
from ..reading.offloaded_read_handle import OffloadedReadHandle
from ..reading.read_ahead import ReadAheadPool

__all__ = ["OpenSegment", "iter_segment_entries", "open_segment", "segment_ledger_handle"]

T = TypeVar("T")
log = logging.getLogger(__name__)

# A block past this is refused before it is read (as for v1 blocks).
_BLOCK_FLOOR = 128 * 2**20


@dataclass(frozen=True)
class OpenSegment:
    """A segment's decoded index and what the store says of its objects."""

    uuid: str
    data_key: str
    index_key: str
    index: v2.SegmentIndex
    data: ObjectInfo
    index_info: ObjectInfo
    entry_offsets: EntryOffsets | None = None


def open_segment(
    driver: StorageDriver, uuid: str, *, prefix: str, max_index_size: int, block_limit: int, retry: RetryPolicy
) -> OpenSegment:
    """Stat both objects and load the index, and the entry offsets where
    the segment has them (after the data object's blocks, or in the
    ``{uuid}-entry-offsets`` object of segments written before they moved
    there). Raises :class:`NotFoundError` naming the segment when an object
    is missing, :class:`FormatError` for a wrong format version, an index
    too large for its data object or the limit, a corrupt index, a data
    object shorter than its index says, or a block over ``block_limit``
    bytes."""
    data_key, index_key = prefix + v2.segment_data_key(uuid), prefix + v2.segment_index_key(uuid)
    index_info = _retrying(lambda: driver.stat(index_key), uuid, index_key, retry)
    data_info = _retrying(lambda: driver.stat(data_key), uuid, data_key, retry)
    for info in (index_info, data_info):
        problem = v1.format_version_problem(info.metadata)
        if problem is not None:
            raise FormatError(f"segment object {info.key!r}: {problem}; check it was written by a streaming offloader")
    try:
        v1.check_index_size(index_info.size, data_info.size, limit=max_index_size)
        index = v2.decode_index(_retrying(lambda: driver.read(index_key), uuid, index_key, retry))
        for _, row in index.blocks:
            span = index.block_end(row) - row.offset
            if span > max(block_limit, _BLOCK_FLOOR):
                raise FormatError(f"block {row.part_id} at offset {row.offset} is {span} bytes, over the limit of "
                                  f"{max(block_limit, _BLOCK_FLOOR)} bytes for a block")  # fmt: skip
    except FormatError as exc:
        raise FormatError(f"segment {uuid}, index {index_key!r}: {exc}") from None
    if data_info.size < index.data_object_length:
        raise FormatError(
            f"segment {uuid}: data object {data_key!r} is {data_info.size} bytes, its index says "
            f"{index.data_object_length}; the segment is damaged (re-offload it from the hot tier if it is still there)"
        )
    if data_info.size > index.data_object_length:
        offsets = _trailing_entry_offsets(driver, data_info, index, retry)
    else:
        offsets = _entry_offsets_object(driver, prefix + v2.segment_entry_offsets_key(uuid), index, retry)
    return OpenSegment(uuid, data_key, index_key, index, data_info, index_info, offsets)


def _section_limit(index: v2.SegmentIndex) -> int:
    """No entry-offsets section of this segment can be longer."""
    return 16 + 4 * len(index.blocks) + 4 * (index.data_object_length // v1.ENTRY_HEADER_LENGTH)


def _trailing_entry_offsets(
    driver: StorageDriver, data: ObjectInfo, index: v2.SegmentIndex, retry: RetryPolicy
) -> EntryOffsets | None:
    """The section after the blocks, past the length the index records,
    where we write it (Pulsar's readers stop at that length). Other bytes
    there cost speed, not data: reads walk entry headers."""
    start, limit = index.data_object_length, _section_limit(index)
    try:
        if data.size - start > limit:
            raise FormatError(f"its {data.size - start} bytes are more than any section of this segment can be")
        section = entry_offsets.decode_section(
            call_with_retries(lambda: driver.read(data.key, start, data.size), retry)
        )
        return _covering(section, index)
    except FormatError as exc:
        log.warning("segment data object %r: the bytes after its blocks are ignored, reads walk entry headers "
                    "instead: %s", data.key, exc)  # fmt: skip
        return None


def _entry_offsets_object(
    driver: StorageDriver, key: str, index: v2.SegmentIndex, retry: RetryPolicy
) -> EntryOffsets | None:
    """The entry-offsets object segments written before the section moved
    into the data object have, when it is there and sound (Pulsar writes
    none; a damaged one costs speed, not data: reads walk)."""
    limit = _section_limit(index)  # a larger object is not read whole
    try:
        raw = call_with_retries(lambda: driver.read(key, 0, limit + 1), retry)
        if len(raw) > limit:
            raise FormatError(f"it is over {limit} bytes, more than any of this segment can be")
        return _covering(entry_offsets.decode_section(raw), index)
    except NotFoundError:
        return None
    except FormatError as exc:
        log.warning("segment entry offsets %r ignored, reads walk entry headers instead: %s", key, exc)
        return None


def _covering(section: EntryOffsets, index: v2.SegmentIndex) -> EntryOffsets:
    """``section`` if it has a row of lengths per block of ``index``.
    Raises :class:`FormatError` otherwise."""
    if section.block_count != len(index.blocks):
        raise FormatError(f"it covers {section.block_count} blocks, the segment has {len(index.blocks)}")
    return section


def segment_ledger_handle(
    driver: StorageDriver,
    segment: OpenSegment,
    ledger_id: int,
    *,
    last_entry_id: int | None,
    read_buffer_size: int,
    read_ahead: ReadAheadPool | None = None,
) -> OffloadedReadHandle:
    """A read handle over ledger ``ledger_id``'s entries in ``segment``.

    ``last_entry_id`` is the ledger's last entry in the segment, as the
    managed ledger's metadata records it; without it, the ledger's last
    block is read (one ranged GET) to find it. The handle's metadata is a
    closed ledger ending there; entries before the segment's first raise
    :class:`InvalidRangeError`."""
    section = segment.index.section(ledger_id)
    if last_entry_id is None:
        last_row = section.rows[-1]
        end = segment.index.block_end(last_row)
        block = v2.decode_block(driver.read(segment.data_key, last_row.offset, end))
        last_entry_id = block.last_entry_id
    table = SegmentLedgerTable(segment.index, ledger_id, last_entry_id)
    info = section.info()
    metadata = v1.closed_ledger_metadata(length=int(info.size), last_entry_id=last_entry_id)
    offsets = segment.entry_offsets
    if offsets is not None:
        try:
            check_entry_offsets(offsets, table, section.rows, blocks=len(segment.index.blocks))
        except FormatError as exc:
            log.warning("segment %s: entry offsets of ledger %s ignored, reads walk instead: %s", segment.uuid,
                        ledger_id, exc)  # fmt: skip
            offsets = None
    return OffloadedReadHandle(ledger_id, table, driver, segment.data_key, read_buffer_size=read_buffer_size,
                               object_size=segment.data.size, metadata=metadata, entry_offsets=offsets,
                               read_ahead=read_ahead)  # fmt: skip


def iter_segment_entries(driver: StorageDriver, segment: OpenSegment, ledger_id: int | None = None) -> Iterator[Entry]:
    """Every entry of the segment (or of one of its ledgers) in order, one
    block in memory at a time; each block is decoded whole and checked
    against its index row. Raises :class:`FormatError` naming the object
    and offset."""
    for block_ledger, row in segment.index.blocks:
        if ledger_id is not None and block_ledger != ledger_id:
            continue
        end = segment.index.block_end(row)
        try:
            data = driver.read(segment.data_key, row.offset, end)
            header_length = v2.decode_block_header(data).header_length
            if header_length != row.data_offset - row.offset:
                raise FormatError(f"block {row.part_id} header says it is {header_length} bytes, the index "
                                  f"{row.data_offset - row.offset}")  # fmt: skip
            block = v2.decode_block(data)
            if (block.header.ledger_id, block.header.first_entry_id) != (block_ledger, row.first_entry_id):
                raise FormatError(
                    f"block {row.part_id} holds ledger {block.header.ledger_id} from entry "
                    f"{block.header.first_entry_id}; its index row says ledger {block_ledger} from {row.first_entry_id}"
                )
        except FormatError as exc:
            raise FormatError(
                f"segment {segment.uuid}, object {segment.data_key!r}, byte offset {row.offset}: {exc}"
            ) from None
        for entry_id, payload in block.entries:
            yield Entry(block_ledger, entry_id, payload)


def _retrying(action: Callable[[], T], uuid: str, key: str, retry: RetryPolicy) -> T:
    try:
        return call_with_retries(action, retry)
    except NotFoundError as exc:
        raise NotFoundError(
            f"segment {uuid} is not in the store: object {key!r} is missing (wrong uuid or prefix, or it was deleted)",
            key=key,
        ) from exc
