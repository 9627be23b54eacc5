"""One hot-tier ledger: an append-only file of checksummed entries.

Layout: ``b"OLEDGER1" | int64 ledger id`` then records ``int32 length |
int64 entry id | uint32 crc32(entry id, payload) | payload``. Appends go
straight to the file descriptor (no user-space buffer), so a killed process
loses nothing it acknowledged; fsync (per :class:`FsyncPolicy`) protects
against losing the machine. On reopen a torn or corrupt tail is found by
length, checksum and entry-id checks and cut at the last whole entry.
"""

from __future__ import annotations

import enum
import os
import struct
from array import array
from collections.abc import Callable
from pathlib import Path

from ...errors import ConfigError, FormatError, InvalidRangeError, OffloadError, StateError
from ...fsutil import fsync_dir
from ...model import Entry
from .hot_records import ENTRY_ID as _ENTRY_ID
from .hot_records import RECORD as _RECORD
from .hot_records import DetachedRecords, RecordSpan, checksum, crc32
from .offsets_index import (
    HEADER_SIZE,
    OffsetsHeader,
    OffsetsIndex,
    chunk_span,
    decode_offsets_chunk,
    decode_offsets_header,
    encode_offsets_index,
    index_size,
)

__all__ = ["FsyncPolicy", "LedgerFile", "index_path"]

_MAGIC = b"OLEDGER1"
_FILE_HEADER = struct.Struct(">8sq")


class FsyncPolicy(enum.Enum):
    """When appends reach the disk: after every append, every
    ``batch_size`` appends (and on seal/close), or when the OS decides."""

    ALWAYS = "always"
    BATCH = "batch"
    NONE = "none"

    @classmethod
    def parse(cls, value: str | FsyncPolicy) -> FsyncPolicy:
        if isinstance(value, FsyncPolicy):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise ConfigError(f"fsync policy {value!r} is not one of: always, batch, none") from None


class LedgerFile:
    """An open ledger file. Use :meth:`create` or :meth:`open`."""

    #: Bytes before the first record; a file no longer than this holds no entry.
    HEADER_SIZE = _FILE_HEADER.size

    def __init__(
        self,
        path: Path,
        ledger_id: int,
        fd: int,
        offsets: array[int] | _IndexedOffsets,
        end: int,
        fsync: FsyncPolicy,
        batch_size: int,
    ) -> None:
        self.path = path
        self.ledger_id = ledger_id
        self._fd = fd
        self._offsets = offsets
        self._end = end
        self._length = 0
        self._fsync = fsync
        self._batch_size = batch_size
        self._unsynced = 0

    @classmethod
    def create(
        cls, path: Path, ledger_id: int, *, fsync: FsyncPolicy = FsyncPolicy.BATCH, batch_size: int = 256
    ) -> LedgerFile:
        """Create a new, empty ledger file; :class:`OffloadError` if it exists."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise StateError(f"hot-tier file for ledger {ledger_id} already exists at {path}") from None
        os.write(fd, _FILE_HEADER.pack(_MAGIC, ledger_id))
        if fsync is not FsyncPolicy.NONE:
            os.fsync(fd)
            fsync_dir(path.parent)
        return cls(path, ledger_id, fd, array("q"), _FILE_HEADER.size, fsync, batch_size)

    @classmethod
    def open(
        cls,
        path: Path,
        ledger_id: int,
        *,
        repair: bool,
        fsync: FsyncPolicy = FsyncPolicy.BATCH,
        batch_size: int = 256,
    ) -> LedgerFile:
        """Open an existing ledger file and index its entries.

        With ``repair`` (the ledger being recovered after a crash) a torn
        tail is cut off at the last whole entry, and a torn file header (a
        crash while the file was being created) is completed: a ledger of
        no entries. Without it (a sealed ledger), a torn or corrupt record
        or header raises :class:`FormatError`.
        Raises :class:`NotFoundError`-compatible ``FileNotFoundError`` if
        the file is missing."""
        fd = os.open(path, os.O_RDWR if repair else os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            header = os.pread(fd, _FILE_HEADER.size, 0)
            expected = _FILE_HEADER.pack(_MAGIC, ledger_id)
            if repair and len(header) < len(expected) and expected.startswith(header):
                # Created, and the crash came before its header was whole:
                # no entry was ever written to it.
                os.pwrite(fd, expected, 0)
                header, size = expected, len(expected)
            if header != expected:
                raise FormatError(f"{path} is not the hot-tier file of ledger {ledger_id}")
            known = None if repair else _IndexedOffsets.load(path, ledger_id, size, lambda: _scan(fd, size)[0])
            offsets: array[int] | _IndexedOffsets
            if known is not None:
                offsets, end, length, problem = known, size, known.header.payload_bytes, None
            else:
                offsets, end, length, problem = _scan(fd, size)
            if problem is not None:
                if not repair:
                    raise FormatError(
                        f"hot-tier file of ledger {ledger_id} ({path}) is corrupt at byte {end}: {problem}"
                    )
                os.ftruncate(fd, end)
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        ledger = cls(path, ledger_id, fd, offsets, end, fsync, batch_size)
        ledger._length = length
        if not repair and known is None:
            ledger.write_offsets_index()  # scanned once: the next open needs no scan
        return ledger

    def write_offsets_index(self) -> None:
        """Record where every entry starts, beside the file (see
        :mod:`~offload_core.managed_ledger.hot.offsets_index`); call it when the
        ledger is sealed. Written atomically; best effort (a ledger without
        an index is scanned when opened, and the index rewritten then)."""
        offsets = self._offsets if isinstance(self._offsets, array) else self._offsets.every()
        index = OffsetsIndex(self.ledger_id, offsets, self._end, self._length)
        target = index_path(self.path)
        partial = target.with_name(target.name + ".tmp")
        try:
            with open(partial, "wb") as out:
                out.write(encode_offsets_index(index))
                if self._fsync is not FsyncPolicy.NONE:
                    out.flush()
                    os.fsync(out.fileno())
            os.replace(partial, target)
        except OSError:
            partial.unlink(missing_ok=True)

    # -- state ---------------------------------------------------------------

    @property
    def entry_count(self) -> int:
        return len(self._offsets)

    @property
    def last_entry_id(self) -> int:
        return len(self._offsets) - 1

    @property
    def length(self) -> int:
        """Payload bytes in the ledger (what BookKeeper calls its length)."""
        return self._length

    # -- writing ---------------------------------------------------------------

    def append(self, payload: bytes) -> int:
        """Append one entry; return its id. Durable per the fsync policy.
        Raises :class:`StateError` on a sealed ledger opened from its index."""
        if not isinstance(self._offsets, array):
            raise StateError(f"ledger {self.ledger_id} is sealed; it takes no more entries")
        entry_id = len(self._offsets)
        header = _RECORD.pack(len(payload), entry_id, checksum(entry_id, payload))
        # Header and payload in one system call, without joining them: a
        # large entry is not copied on its way to the file.
        written = os.pwritev(self._fd, [header, payload], self._end)
        if written != len(header) + len(payload):
            os.ftruncate(self._fd, self._end)
            raise OffloadError(
                f"short write to {self.path}: {written} of {len(header) + len(payload)} bytes; is the disk full?"
            )
        self._offsets.append(self._end)
        self._end += len(header) + len(payload)
        self._length += len(payload)
        self._unsynced += 1
        if self._fsync is FsyncPolicy.ALWAYS or (
            self._fsync is FsyncPolicy.BATCH and self._unsynced >= self._batch_size
        ):
            self.sync()
        return entry_id

    def sync(self) -> None:
        """Force appended entries to disk (whatever the policy)."""
        if self._unsynced:
            os.fsync(self._fd)
            self._unsynced = 0

    # -- reading ---------------------------------------------------------------

    def payload_bytes(self, first: int, end: int) -> int:
        """Payload bytes of entries ``first`` up to (not including) ``end``,
        from the record offsets alone (no read): what a binary search over
        entry positions needs. ``0 <= first <= end <= entry_count``."""
        if not 0 <= first <= end <= len(self._offsets):
            raise InvalidRangeError(f"ledger {self.ledger_id}: no entry range {first}..{end - 1}")
        stop = self._offsets[end] if end < len(self._offsets) else self._end
        start = self._offsets[first] if first < len(self._offsets) else self._end
        return stop - start - (end - first) * _RECORD.size

    def read(self, first: int, last: int) -> list[Entry]:
        """Entries ``first..last`` inclusive; :class:`InvalidRangeError` outside the ledger."""
        return self.detach(first, last).entries()

    def detach(self, first: int, last: int) -> DetachedRecords:
        """Entries ``first..last`` inclusive, to be read later without this
        object (and without the lock its owner holds around it): the
        records' byte range and a file descriptor of their own, which a
        :meth:`close` or the file's deletion meanwhile does not disturb.
        :class:`InvalidRangeError` outside the ledger."""
        if first < 0 or first > last or last > self.last_entry_id:
            raise InvalidRangeError(
                f"ledger {self.ledger_id}: cannot read entries {first}..{last}; hot tier holds 0..{self.last_entry_id}"
            )
        return DetachedRecords(self.span(first, last), os.dup(self._fd))

    def span(self, first: int, last: int) -> RecordSpan:
        """Where entries ``first..last`` (inclusive, within the ledger) lie
        in the file, for a reader in another process."""
        start = self._offsets[first]
        stop = self._offsets[last + 1] if last + 1 < len(self._offsets) else self._end
        return RecordSpan(str(self.path), self.ledger_id, first, last, start, stop)

    def close(self) -> None:
        if self._fd >= 0:
            if self._fsync is not FsyncPolicy.NONE:
                self.sync()
            os.close(self._fd)
            self._fd = -1
            if isinstance(self._offsets, _IndexedOffsets):
                self._offsets.close()


def index_path(ledger_path: Path) -> Path:
    """Where the offsets index of the ledger file at ``ledger_path`` lives."""
    return ledger_path.with_name(ledger_path.name + ".idx")


class _IndexedOffsets:
    """The record offsets of a sealed ledger, read from its offsets index a
    chunk at a time as reads need them (so an open reads the index's header
    only). A chunk that turns out damaged makes the ledger file be scanned
    once (``rescan``), and the scanned offsets serve from then on."""

    def __init__(self, fd: int, header: OffsetsHeader, rescan: Callable[[], array[int]]) -> None:
        self._fd = fd
        self.header = header
        self._rescan = rescan
        self._chunks: dict[int, array[int]] = {}
        self._scanned: array[int] | None = None

    @classmethod
    def load(cls, path: Path, ledger_id: int, size: int, rescan: Callable[[], array[int]]) -> _IndexedOffsets | None:
        """The index if it is there and its header is intact and about this
        very file (same ledger, same size); ``None`` means scan instead."""
        try:
            fd = os.open(index_path(path), os.O_RDONLY)
        except OSError:
            return None
        try:
            header = decode_offsets_header(os.pread(fd, HEADER_SIZE, 0))
            if header.ledger_id != ledger_id or header.data_end != size:
                raise FormatError("the offsets index describes another file")
            if os.fstat(fd).st_size != index_size(header):
                raise FormatError("the offsets index is cut short or too long")
        except (OSError, FormatError):
            os.close(fd)
            return None
        return cls(fd, header, rescan)

    def __len__(self) -> int:
        return self.header.entry_count

    def __getitem__(self, entry_id: int) -> int:
        if self._scanned is not None:
            return self._scanned[entry_id]
        if not 0 <= entry_id < self.header.entry_count:
            raise IndexError(entry_id)
        chunk, at = divmod(entry_id, self.header.chunk_entries)
        offsets = self._chunks.get(chunk)
        if offsets is None:
            start, length = chunk_span(self.header, chunk)
            try:
                offsets = decode_offsets_chunk(self.header, chunk, os.pread(self._fd, length, start))
            except (OSError, FormatError):
                self._scanned = self._rescan()
                return self._scanned[entry_id]
            self._chunks[chunk] = offsets
        return offsets[at]

    def every(self) -> array[int]:
        """All the offsets (loading every chunk)."""
        return array("q", (self[entry_id] for entry_id in range(len(self))))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _scan(fd: int, size: int) -> tuple[array[int], int, int, str | None]:
    """Index the records: offsets, end of the last whole record, payload
    bytes, and what is wrong after it (``None`` if nothing)."""
    offsets: array[int] = array("q")
    position = _FILE_HEADER.size
    length_total = 0
    chunk_size = 1 << 20
    while position < size:
        header = os.pread(fd, _RECORD.size, position)
        if len(header) < _RECORD.size:
            return offsets, position, length_total, "record header cut off"
        length, entry_id, checksum = _RECORD.unpack(header)
        if length < 0 or position + _RECORD.size + length > size:
            return offsets, position, length_total, "record cut off"
        if entry_id != len(offsets):
            return offsets, position, length_total, f"entry id {entry_id} where {len(offsets)} was expected"
        crc = crc32(_ENTRY_ID.pack(entry_id))
        read = 0
        while read < length:
            piece = os.pread(fd, min(chunk_size, length - read), position + _RECORD.size + read)
            crc = crc32(piece, crc)
            read += len(piece)
        if crc != checksum:
            return offsets, position, length_total, f"checksum mismatch in entry {entry_id}"
        offsets.append(position)
        length_total += length
        position += _RECORD.size + length
    return offsets, position, length_total, None
