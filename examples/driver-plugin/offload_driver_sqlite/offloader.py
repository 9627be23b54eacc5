"""A third-party ledger offloader: each ledger as one packed object.

Where the core's blob-store offloader writes Pulsar's two objects (data
and index), this one writes ``{uuid}-ledger-{id}.packed``: the entries
back to back (``int32 length | payload``), then a table of their offsets,
then a 24-byte trailer (``int64 table offset | int64 entry count | int64
magic``). A reader fetches the trailer, then the table, then one range per
read. It serves the ``sqlite`` driver (see ``plugin.py``), the way Pulsar's
file-system offloader serves its ``filesystem`` driver.
"""

from __future__ import annotations

import struct
import uuid as uuid_module
from array import array
from collections.abc import Iterator, Mapping

from offload_core import (
    Entry,
    FormatError,
    InvalidRangeError,
    NotFoundError,
    OffloadResult,
    StateError,
    StorageDriver,
)
from offload_core.formats.pulsar_v1 import closed_ledger_metadata
from offload_core.offload import ReadHandle
from offload_core.offload.reading.read_handle import LedgerMetadataView, check_read_range
from offload_core.proto import LedgerMetadataFormat

__all__ = ["PackedLedgerOffloader"]

_MAGIC = 0x5041434B45443031  # "PACKED01"
_TRAILER = struct.Struct(">qqq")
_LENGTH = struct.Struct(">i")
_BATCH = 200


class PackedLedgerOffloader:
    """One object per ledger on any storage driver; see the module docs."""

    def __init__(self, driver: StorageDriver, *, prefix: str = "") -> None:
        self.driver = driver
        self.prefix = prefix

    def key(self, ledger_id: int, uuid: uuid_module.UUID | str, prefix: str | None = None) -> str:
        return f"{self.prefix if prefix is None else prefix}{uuid}-ledger-{ledger_id}.packed"

    def driver_metadata(self) -> Mapping[str, str]:
        return {"prefix": self.prefix}

    def offload(
        self, handle: ReadHandle, uuid: uuid_module.UUID | str, extra_metadata: Mapping[str, str] | None = None
    ) -> OffloadResult:
        if handle.metadata.state != LedgerMetadataFormat.CLOSED:
            raise StateError(f"ledger {handle.ledger_id} is not closed; only sealed ledgers can be offloaded")
        if handle.last_entry_id < 0:
            raise StateError(f"ledger {handle.ledger_id} is empty; there is nothing to offload")
        key = self.key(handle.ledger_id, uuid)
        metadata = {name.lower(): value for name, value in (extra_metadata or {}).items()}
        # The driver's write is all-or-nothing: a failure anywhere leaves no object.
        info = self.driver.write(key, _packed(handle), metadata={**metadata, "packedformat": "1"})
        return OffloadResult(handle.ledger_id, str(uuid), key, key, 1, info.size, dict(self.driver_metadata()))

    def read_offloaded(
        self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> PackedReadHandle:
        key = self.key(ledger_id, uuid, (driver_metadata or {}).get("prefix"))
        try:
            size = self.driver.stat(key).size
        except NotFoundError:
            raise NotFoundError(f"offloaded ledger {ledger_id} is not in the store ({key!r})", key=key) from None
        if size < _TRAILER.size:
            raise FormatError(f"{key!r} is {size} bytes, too short for a packed ledger")
        table_offset, count, magic = _TRAILER.unpack(self.driver.read(key, size - _TRAILER.size, size))
        if magic != _MAGIC or count < 1 or not 0 <= table_offset <= size - _TRAILER.size - 8 * count:
            raise FormatError(f"{key!r} has no valid packed-ledger trailer")
        offsets = array("q", struct.unpack(f">{count}q", self.driver.read(key, table_offset, table_offset + 8 * count)))
        return PackedReadHandle(ledger_id, key, self.driver, offsets, table_offset)

    def delete_offloaded(
        self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> None:
        self.driver.delete(self.key(ledger_id, uuid, (driver_metadata or {}).get("prefix")))

    def close(self) -> None:
        self.driver.close()


class PackedReadHandle(LedgerMetadataView):
    """Reads a packed ledger: one ranged read per call."""

    def __init__(self, ledger_id: int, key: str, driver: StorageDriver, offsets: array[int], end: int) -> None:
        self._ledger_id = ledger_id
        self._key = key
        self._driver = driver
        self._offsets = offsets
        self._end = end
        self._closed = False
        length = end - offsets[0] - 4 * len(offsets)
        self._metadata = closed_ledger_metadata(length=length, last_entry_id=len(offsets) - 1)

    def read(self, first: int, last: int) -> list[Entry]:
        if self._closed:
            raise StateError(f"ledger {self._ledger_id}: read handle is closed")
        check_read_range(self._ledger_id, first, last, self.last_entry_id)
        start = self._offsets[first]
        stop = self._offsets[last + 1] if last + 1 < len(self._offsets) else self._end
        data = self._driver.read(self._key, start, stop)
        entries, at = [], 0
        for entry_id in range(first, last + 1):
            (length,) = _LENGTH.unpack_from(data, at)
            if length < 0 or at + 4 + length > len(data):
                raise FormatError(f"{self._key!r}: entry {entry_id} at byte {start + at} is framed wrong")
            entries.append(Entry(self._ledger_id, entry_id, data[at + 4 : at + 4 + length]))
            at += 4 + length
        return entries

    def close(self) -> None:
        self._closed = True


def _packed(handle: ReadHandle) -> Iterator[bytes]:
    offsets = array("q")
    position = 0
    for first in range(0, handle.last_entry_id + 1, _BATCH):
        batch = handle.read(first, min(first + _BATCH - 1, handle.last_entry_id))
        chunk = bytearray()
        for entry in batch:
            offsets.append(position)
            chunk += _LENGTH.pack(len(entry.data)) + entry.data
            position += 4 + len(entry.data)
        yield bytes(chunk)
    if len(offsets) != handle.last_entry_id + 1:
        raise InvalidRangeError(f"ledger {handle.ledger_id}: the read handle returned {len(offsets)} entries")
    yield struct.pack(f">{len(offsets)}q", *offsets)
    yield _TRAILER.pack(position, handle.last_entry_id + 1, _MAGIC)
