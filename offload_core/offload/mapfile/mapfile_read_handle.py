"""Reading a MapFile ledger back, as Hadoop's ``MapFile.Reader.seek`` and
Pulsar's ``FileStoreBackedReadHandleImpl`` do: the ``index`` is read whole,
a read seeks to the floor index entry of its first entry and scans
``data`` forward, a block (BLOCK) or a record (RECORD, NONE) at a time.

Ranged: ``data`` is read through :class:`ObjectBytes`, one window for a
random read and, for a reader that goes on where it stopped, a stream of
ranges read ahead on the offloader's read-ahead pool. Nothing is trusted:
keys must run -1, 0, 1, ... with no gap or repeat, a unit must decode
whole (sync marker, lengths, zlib), and the file must hold every entry the
ledger's metadata (key -1) promises; else :class:`FormatError` naming the
file and the byte offset.
"""

from __future__ import annotations

from ...errors import FormatError, StateError
from ...formats.hadoop_writables import ShortInput
from ...formats.mapfile import MapFileIndex, unit_entries
from ...formats.sequence_file import MAX_UNIT_SIZE, Header, Unit, decode_unit
from ...model import Entry
from ...proto import LedgerMetadataFormat
from ...storage import StorageDriver
from ..reading.object_bytes import ObjectBytes, Stream
from ..reading.read_ahead import ReadAheadPool
from ..reading.read_handle import LedgerMetadataView, check_read_range

__all__ = ["MapFileReadHandle", "read_unit"]

_FIRST_GUESS = 64 * 1024


def read_unit(data: ObjectBytes, header: Header, position: int, end: int, name: str, stream: Stream | None) -> Unit:
    """The unit at byte ``position`` of ``data`` (``end`` bytes long),
    fetching more as the decoder asks. Raises :class:`FormatError` naming
    ``name`` and the offset when the file ends inside the unit or the unit
    does not decode."""
    count = min(_FIRST_GUESS, end - position)
    while True:
        buffer, at, available = data.get(position, count, stream)
        try:
            return decode_unit(memoryview(buffer)[at : at + available], 0, header, base=position)
        except ShortInput as short:
            count = available + short.needed
            if position + count > end or count > MAX_UNIT_SIZE:
                raise FormatError(
                    f"{name}: cut short: the unit at byte {position} needs {count} bytes, the file ends at {end}"
                ) from None
        except FormatError as exc:
            raise FormatError(f"{name}: {exc}") from None


class MapFileReadHandle(LedgerMetadataView):
    """A :class:`~offload_core.offload.reading.read_handle.ReadHandle` over
    one MapFile ledger: ``data`` (whose ``header`` ends at ``header_end``
    and whose size is ``data_size``) and its decoded ``index``. The
    offloader opens it (:meth:`MapFileLedgerOffloader.read_offloaded`).

    Raises :class:`InvalidRangeError` for entries outside the ledger,
    :class:`FormatError` naming the file and offset for one that does not
    hold what its metadata promises, :class:`StateError` once closed.
    """

    def __init__(
        self,
        ledger_id: int,
        metadata: LedgerMetadataFormat,
        *,
        driver: StorageDriver,
        data_key: str,
        header: Header,
        data_size: int,
        index: MapFileIndex,
        read_buffer_size: int,
        read_ahead: ReadAheadPool | None,
    ) -> None:
        self._ledger_id = ledger_id
        self._metadata = metadata
        self._name = data_key
        self._header = header
        self._size = data_size
        self._index = index
        self._bytes = ObjectBytes(
            driver, data_key, data_size, buffer_size=read_buffer_size, pool=read_ahead, corrupt=self._corrupt
        )
        # One sequential reader is followed: where its next read starts
        # (entry id, the unit holding it) and its read-ahead stream.
        self._cursor: tuple[int, int, Stream] | None = None
        self._last_unit: tuple[Unit, list[tuple[int, bytes]]] | None = None
        self._closed = False

    @property
    def data_header(self) -> Header:
        """``data``'s SequenceFile header."""
        return self._header

    @property
    def data_size(self) -> int:
        return self._size

    @property
    def index(self) -> MapFileIndex:
        return self._index

    def read(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` inclusive."""
        if self._closed:
            raise StateError(f"ledger {self._ledger_id}: read handle is closed")
        check_read_range(self._ledger_id, first, last, self.last_entry_id)
        if self._cursor is not None and self._cursor[0] == first:
            _, position, stream = self._cursor
        else:
            if self._cursor is not None:
                self._bytes.drop(self._cursor[2])
            stream = self._bytes.stream()
            position = self._seek(first)
        self._cursor = None
        try:
            entries, position = self._scan(first, last, position, stream)
        except BaseException:
            self._bytes.drop(stream)
            raise
        self._cursor = (last + 1, position, stream)
        return entries

    def prefetch(self, entry_id: int) -> bool:
        """Start reading ahead from ``entry_id`` for the reader that will
        read it next (one crossing into this ledger), without waiting.
        False when the handle is closed or already follows a reader (it
        follows one). Raises :class:`InvalidRangeError` for an entry the
        ledger does not hold."""
        check_read_range(self._ledger_id, entry_id, entry_id, self.last_entry_id)
        if self._closed or self._cursor is not None:
            return False
        position = self._seek(entry_id)
        stream = self._bytes.stream()
        self._bytes.warm(stream, position)
        self._cursor = (entry_id, position, stream)
        return True

    def in_last_block(self, entry_id: int) -> bool:
        """Whether ``entry_id`` is past the index's last key: a reader there
        has at most one index interval left before it crosses into what
        follows."""
        return self._index.floor_offset(entry_id) == self._index.floor_offset(self.last_entry_id)

    def _seek(self, entry_id: int) -> int:
        offset = self._index.floor_offset(entry_id)
        if offset is None:
            raise FormatError(f"{self._name}: the index has no key at or before entry {entry_id}")
        return offset

    def _scan(self, first: int, last: int, position: int, stream: Stream) -> tuple[list[Entry], int]:
        """Entries ``first..last`` from the unit at ``position`` on; and
        the offset of the unit holding ``last + 1``."""
        entries: list[Entry] = []
        expected: int | None = None
        while True:
            if position >= self._size:
                raise FormatError(
                    f"{self._name}: ends at byte {position} before entry {first + len(entries)} of ledger "
                    f"{self._ledger_id} (its metadata says the last is {self.last_entry_id})"
                )
            unit, records = self._unit(position, stream)
            for key, payload in records:
                if expected is None:
                    if key > first:
                        raise FormatError(
                            f"{self._name}: the index sends entry {first} to byte {position}, where key {key} starts"
                        )
                elif key != expected:
                    raise FormatError(f"{self._name}: key {key} where {expected} should follow, at byte {position}")
                expected = key + 1
                if first <= key <= last:
                    entries.append(Entry(self._ledger_id, key, payload))
                elif key > last:
                    return entries, position
            position = unit.end
            if expected is not None and expected > last:
                return entries, position

    def _unit(self, position: int, stream: Stream) -> tuple[Unit, list[tuple[int, bytes]]]:
        # A read that stops inside a block and the next one that goes on
        # from there share the decoded block.
        if self._last_unit is not None and self._last_unit[0].offset == position:
            return self._last_unit
        unit = read_unit(self._bytes, self._header, position, self._size, self._name, stream)
        decoded = (unit, unit_entries(unit, self._name))
        self._last_unit = decoded
        return decoded

    def close(self) -> None:
        """Release the buffers and cancel whatever was read ahead."""
        self._closed = True
        self._cursor = None
        self._last_unit = None
        self._bytes.close()

    def _corrupt(self, position: int, problem: str) -> FormatError:
        return FormatError(f"{self._name}: byte {position}: {problem}")
