"""Runs of a hot-tier ledger file's records, read without the ledger.

A record is ``int32 length | int64 entry id | uint32 crc32(entry id,
payload) | payload`` (see :mod:`~offload_core.managed_ledger.hot.ledger_file`).
A reader locates a run under the managed ledger's lock (a
:class:`RecordSpan`, or a :class:`DetachedRecords` with a descriptor of
its own) and reads it after letting the lock go, in this process or in
another one.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

# ISA-L's CRC-32 gives zlib's values at two to four times its speed (SIMD);
# every append computes one and a streaming worker checks one per entry.
from isal.isal_zlib import crc32

from ...errors import FormatError
from ...model import Entry

__all__ = ["ENTRY_ID", "RECORD", "DetachedRecords", "RecordSpan", "checksum", "crc32", "parse_records"]

RECORD = struct.Struct(">iqI")
ENTRY_ID = struct.Struct(">q")


def checksum(entry_id: int, payload: bytes | memoryview) -> int:
    """A record's checksum: CRC-32 of the entry id and the payload."""
    return crc32(payload, crc32(ENTRY_ID.pack(entry_id)))


@dataclass(frozen=True)
class RecordSpan:
    """Where records ``first..last`` of a ledger's hot-tier file lie.
    Picklable: a reader in another process opens the file itself."""

    path: str
    ledger_id: int
    first: int
    last: int
    start: int
    stop: int

    def read_payloads(self, fd: int | None = None) -> list[memoryview]:
        """The entries' payloads, as views of one buffer read at once (from
        ``fd`` if given, else from the file opened by path); every record
        checked (:class:`FormatError` naming the file)."""
        own = os.open(self.path, os.O_RDONLY) if fd is None else fd
        try:
            chunk = os.pread(own, self.stop - self.start, self.start)
        finally:
            if fd is None:
                os.close(own)
        if len(chunk) != self.stop - self.start:
            raise FormatError(f"hot-tier file of ledger {self.ledger_id} shrank under the reader ({self.path})")
        return parse_records(chunk, self.ledger_id, self.first, self.last, self.path)


class DetachedRecords:
    """A run of a ledger file's records with a descriptor of its own, read
    once: :meth:`payloads` or :meth:`entries` reads them, checks every
    record (length, entry id, checksum; :class:`FormatError` naming the
    file) and closes the descriptor; so does :meth:`close` without reading."""

    def __init__(self, span: RecordSpan, fd: int) -> None:
        self.span = span
        self.ledger_id = span.ledger_id
        self.first = span.first
        self._fd = fd

    def payloads(self) -> list[memoryview]:
        """The entries' payloads, as views of one buffer read at once."""
        try:
            return self.span.read_payloads(self._fd)
        finally:
            self.close()

    def entries(self) -> list[Entry]:
        ledger_id, first = self.ledger_id, self.first
        return [Entry(ledger_id, first + i, bytes(payload)) for i, payload in enumerate(self.payloads())]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def parse_records(chunk: bytes, ledger_id: int, first: int, last: int, path: str | Path) -> list[memoryview]:
    """The payloads of records ``first..last``, which ``chunk`` holds
    exactly and in order; :class:`FormatError` for a record whose length,
    entry id or checksum is wrong, or for bytes left over. Pure."""
    view = memoryview(chunk)
    size = len(chunk)
    payloads: list[memoryview] = []
    append = payloads.append
    unpack = RECORD.unpack_from
    pack_id = ENTRY_ID.pack
    header = RECORD.size
    at = 0
    entry_id = first
    # Every entry a worker streams passes here, and for small entries this
    # loop is the largest part of its time (bench/README): a record cut off
    # by the chunk's end shows as unpack_from's error rather than a bounds
    # test per record, and the loop keeps to locals.
    try:
        for entry_id in range(first, last + 1):
            length, stored_id, checksum = unpack(view, at)
            start = at + header
            at = start + length
            payload = view[start:at]
            if stored_id != entry_id or length < 0 or at > size or crc32(payload, crc32(pack_id(entry_id))) != checksum:
                break
            append(payload)
        else:
            if at == size:
                return payloads
            raise FormatError(f"hot-tier file of ledger {ledger_id} is corrupt after entry {last} ({path})")
    except struct.error:
        pass  # a record header cut off by the end of the chunk
    raise FormatError(f"hot-tier file of ledger {ledger_id} is corrupt at entry {entry_id} ({path})")
