"""Reading an offloaded (PIP-17 v1) ledger back, entry by entry.

Entries are found with the index (floor lookup gives the block), then by
walking the block's entry headers; every position learned is kept in an
offsets cache. Bytes come through a read buffer: each storage request
fetches ``read_buffer_size`` bytes from where the reader needs, so a
sequential (catch-up) read is served from that window and pays one round
trip per buffer, not per entry.
"""

from __future__ import annotations

import struct
from collections import OrderedDict

from ..errors import FormatError, OffloadError
from ..formats import pulsar_v1 as v1
from ..model import Entry
from ..storage import StorageDriver
from .read_handle import LedgerMetadataView, check_read_range

__all__ = ["OffloadedReadHandle"]

_ENTRY_HEADER = struct.Struct(">iq")
_OFFSETS_CACHE_ENTRIES = 65536


class OffloadedReadHandle(LedgerMetadataView):
    """A :class:`~offload_core.offload.read_handle.ReadHandle` over a data
    object and its decoded index.

    Raises :class:`InvalidRangeError` for entry ranges outside the ledger
    and :class:`FormatError` (naming the ledger and byte offset) when the
    data object does not hold what its index promises.
    """

    def __init__(
        self,
        ledger_id: int,
        index: v1.Index,
        driver: StorageDriver,
        data_key: str,
        *,
        read_buffer_size: int,
    ) -> None:
        self._ledger_id = ledger_id
        self._index = index
        self._metadata = index.metadata()
        self._driver = driver
        self._data_key = data_key
        self._buffer_size = read_buffer_size
        self._buffer_start = 0
        self._buffer = b""
        self._offsets: OrderedDict[int, int] = OrderedDict()
        self._closed = False

    @property
    def index(self) -> v1.Index:
        return self._index

    def read(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` inclusive."""
        if self._closed:
            raise OffloadError(f"ledger {self._ledger_id}: read handle is closed")
        check_read_range(self._ledger_id, first, last, self.last_entry_id)
        entries = []
        for entry_id in range(first, last + 1):
            offset, length = self._locate(entry_id)
            data = self._bytes(offset + v1.ENTRY_HEADER_LENGTH, length)
            entries.append(Entry(self._ledger_id, entry_id, data))
            self._remember(entry_id + 1, offset + v1.ENTRY_HEADER_LENGTH + length)
        return entries

    def close(self) -> None:
        self._closed = True
        self._buffer = b""
        self._offsets.clear()

    # -- locating entries ----------------------------------------------------

    def _locate(self, entry_id: int) -> tuple[int, int]:
        """Byte offset and payload length of ``entry_id``."""
        block = self._index.lookup(entry_id)
        start, end = block.data_offset, self._index.block_end(block)
        position, at_id = start, block.first_entry_id
        known = self._offsets.get(entry_id)
        if known is not None and start <= known < end:
            position, at_id = known, entry_id
        while True:
            # A negative length is padding (its first byte is 0xFE): the
            # entry should have been in this block and is not.
            if position + v1.ENTRY_HEADER_LENGTH > end:
                raise self._corrupt(position, f"entry {entry_id} is not in block {block.part_id}")
            length, stored_id = _ENTRY_HEADER.unpack(self._bytes(position, v1.ENTRY_HEADER_LENGTH))
            if length < 0:
                raise self._corrupt(position, f"entry {entry_id} is not in block {block.part_id}")
            if stored_id != at_id:
                raise self._corrupt(position, f"found entry id {stored_id}, expected {at_id}")
            if position + v1.ENTRY_HEADER_LENGTH + length > end:
                raise self._corrupt(position, f"entry {stored_id} of {length} bytes runs past its block")
            self._remember(stored_id, position)
            if stored_id == entry_id:
                return position, int(length)
            position += v1.ENTRY_HEADER_LENGTH + length
            at_id += 1

    def _remember(self, entry_id: int, position: int) -> None:
        self._offsets[entry_id] = position
        self._offsets.move_to_end(entry_id)
        if len(self._offsets) > _OFFSETS_CACHE_ENTRIES:
            self._offsets.popitem(last=False)

    # -- buffered bytes ------------------------------------------------------

    def _bytes(self, position: int, count: int) -> bytes:
        buffered_from = position - self._buffer_start
        if buffered_from >= 0 and buffered_from + count <= len(self._buffer):
            return self._buffer[buffered_from : buffered_from + count]
        end = min(position + max(count, self._buffer_size), self._index.data_object_length)
        if position + count > end:
            raise self._corrupt(position, f"needs {count} bytes past the end of the data object")
        data = self._driver.read(self._data_key, position, end)
        if len(data) != end - position:
            raise self._corrupt(position, f"data object ends early ({len(data)} of {end - position} bytes came back)")
        self._buffer_start, self._buffer = position, data
        return data[:count]

    def _corrupt(self, position: int, problem: str) -> FormatError:
        return FormatError(
            f"offloaded ledger {self._ledger_id}, object {self._data_key!r}, byte offset {position}: {problem}"
        )
