"""Pulsar's file-system offloader (``tiered-storage/file-system``,
``FileSystemManagedLedgerOffloader``): each ledger a Hadoop MapFile.

A ledger lives in the directory ``{ManagedLedgerName}/{ledgerId}-{uuid}/``
below the store's root (Pulsar's ``hadoop.tmp.dir`` on ``fileSystemURI``):
``data`` holds key -1 = the ledger's ``LedgerMetadataFormat`` (the bytes a
PIP-17 index carries), then key = entry id, value = the entry; ``index``
is the MapFile index (see :mod:`offload_core.formats.mapfile`). On a local
directory store the ``.data.crc`` / ``.index.crc`` files Hadoop's
``LocalFileSystem`` checks are written too (HDFS keeps checksums itself),
and reads check them wherever they are found, as Hadoop does.

Crash safety: every file is one all-or-nothing storage write, and
``index`` is written last, so a directory without it is an offload that
never finished: Hadoop's ``MapFile.Reader`` cannot open it and neither
does :meth:`MapFileLedgerOffloader.read_offloaded` (a :class:`FormatError`
saying so); a failed offload removes what it wrote.
"""

from __future__ import annotations

import logging
import os
import uuid as uuid_module
from collections.abc import Callable, Iterable, Iterator, Mapping

from ...errors import ConfigError, FormatError, NotFoundError
from ...formats.hadoop_crc import CrcWriter, check_crc_file, crc_file_name
from ...formats.hadoop_writables import ShortInput
from ...formats.mapfile import DEFAULT_INDEX_INTERVAL, MapFileEncoder, check_data_header, decode_index, unit_entries
from ...formats.pulsar_v1_index import parse_ledger_metadata
from ...formats.sequence_file import Compression, Header, Unit, decode_header
from ...formats.sequence_file_writer import DEFAULT_BLOCK_SIZE
from ...hooks import Event
from ...proto import LedgerMetadataFormat
from ...storage import StorageDriver
from ..ledger import OffloadResult
from ..ledgers.ledger_payloads import ledger_payloads
from ..offloader_base import OffloaderBase
from ..reading.object_bytes import ObjectBytes
from ..reading.read_ahead import ReadAheadPool
from ..reading.read_handle import ReadHandle
from .checksummed_reads import checksummed
from .mapfile_read_handle import MapFileReadHandle, read_unit

__all__ = ["MANAGED_LEDGER_NAME", "MapFileLedgerOffloader", "delete_mapfile_files", "ledger_directory"]

log = logging.getLogger(__name__)

MANAGED_LEDGER_NAME = "ManagedLedgerName"
"""The metadata key Pulsar passes the managed ledger's name under (at
offload in the extra metadata, at read and delete in the driver metadata)."""

DATA, INDEX = "data", "index"
_READ_BATCH_BYTES = 4 * 2**20
_WRITE_SIZE = 2**20
_MAX_INDEX_SIZE = 64 * 2**20
_CHECKSUMMED_DRIVERS = frozenset({"filesystem", "local-directory"})


def ledger_directory(managed_ledger: str, ledger_id: int, uuid: uuid_module.UUID | str) -> str:
    """``{ManagedLedgerName}/{ledgerId}-{uuid}``, as Pulsar names it."""
    return f"{managed_ledger}/{ledger_id}-{uuid}"


class MapFileLedgerOffloader(OffloaderBase):
    """A :class:`~offload_core.offload.ledger.LedgerOffloader` writing and
    reading Pulsar's file-system offloader's MapFiles on a storage driver
    rooted where Pulsar's ``hadoop.tmp.dir`` is.

    ``compression`` (``io.seqfile.compression.type``: ``BLOCK`` as in
    Pulsar's shipped profile, ``RECORD`` Hadoop's default, or ``NONE``),
    ``block_size`` (``io.seqfile.compress.blocksize``) and
    ``index_interval`` (``io.map.index.interval``) are the Hadoop profile's;
    ``checksum_files`` writes the ``.crc`` files (by default on a local
    directory store); ``check_checksums`` (default on) checks reads against
    them where they are there (off only for a reader that checks them
    itself and reports each mismatch, as verification does). ``new_sync`` draws each file's 16-byte sync marker.
    Every storage request is counted (``requests``) and, with ``emit``,
    reported as a ``storage.request`` event, as the blob-store offloader
    does. Invalid settings raise :class:`ConfigError`.
    """

    def __init__(
        self,
        driver: StorageDriver,
        *,
        compression: Compression | str = Compression.BLOCK,
        block_size: int = DEFAULT_BLOCK_SIZE,
        index_interval: int = DEFAULT_INDEX_INTERVAL,
        read_buffer_size: int = 2**20,
        prefix: str = "",
        checksum_files: bool | None = None,
        check_checksums: bool = True,
        emit: Callable[[Event], None] | None = None,
        read_ahead: ReadAheadPool | None = None,
        new_sync: Callable[[], bytes] = lambda: os.urandom(16),
    ) -> None:
        try:
            self.compression = Compression(compression.upper()) if isinstance(compression, str) else compression
        except ValueError:
            raise ConfigError(f"io.seqfile.compression.type is {compression!r}; use BLOCK, RECORD or NONE") from None
        for name, value in (("io.seqfile.compress.blocksize", block_size), ("io.map.index.interval", index_interval),
                            ("managedLedgerOffloadReadBufferSizeInBytes", read_buffer_size)):  # fmt: skip
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        self.block_size = block_size
        self.index_interval = index_interval
        self.read_buffer_size = read_buffer_size
        self.checksum_files = driver.name in _CHECKSUMMED_DRIVERS if checksum_files is None else checksum_files
        self.check_checksums = check_checksums
        self._new_sync = new_sync
        super().__init__(driver, prefix=prefix, emit=emit, read_ahead=read_ahead)

    def __repr__(self) -> str:
        return f"MapFileLedgerOffloader({self.driver.inner!r}, compression={self.compression.value})"

    def directory(self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None) -> str:
        """The ledger's directory key, under the managed ledger's name from
        ``driver_metadata`` (``null`` without one, as Pulsar's
        ``getStoragePath`` names it then)."""
        metadata = driver_metadata or {}
        name = _managed_ledger_name(metadata) or "null"
        return metadata.get("prefix", self.prefix) + ledger_directory(name, ledger_id, uuid)

    # -- offload -------------------------------------------------------------

    def offload(
        self, handle: ReadHandle, uuid: uuid_module.UUID | str, extra_metadata: Mapping[str, str] | None = None
    ) -> OffloadResult:
        """Write the closed ledger behind ``handle`` as a MapFile in the
        directory of the managed ledger ``extra_metadata`` names
        (``ManagedLedgerName``). Raises :class:`StateError` for an open or
        empty ledger; on any failure every file written is removed before
        the error propagates. The result's driver metadata names the
        managed ledger, to be passed back to reads and deletes."""
        ledger_id = handle.ledger_id
        self._check_offloadable(handle)
        recorded = {**self.driver_metadata(), MANAGED_LEDGER_NAME: _managed_ledger_name(extra_metadata) or "null"}
        directory = self.directory(ledger_id, uuid, recorded)
        keys = [f"{directory}/{name}" for name in (DATA, crc_file_name(DATA), crc_file_name(INDEX), INDEX)]
        with self._offloading(ledger_id, uuid, directory, keys):
            size = self._write_files(handle, directory)
        self._event("offload.finished", ledger_id=ledger_id, uuid=str(uuid), bytes=size, blocks=1)
        return OffloadResult(ledger_id=ledger_id, uuid=str(uuid), data_key=f"{directory}/{DATA}",
                             index_key=f"{directory}/{INDEX}", blocks=1, data_object_length=size,
                             driver_metadata=recorded)  # fmt: skip

    def _write_files(self, handle: ReadHandle, directory: str) -> int:
        encoder = MapFileEncoder(compression=self.compression, data_sync=self._new_sync(),
                                 index_sync=self._new_sync(), block_size=self.block_size,
                                 index_interval=self.index_interval)  # fmt: skip
        metadata = handle.metadata
        if metadata.HasField("password"):
            metadata = LedgerMetadataFormat.FromString(metadata.SerializeToString())
            metadata.ClearField("password")
        data_crc = CrcWriter()
        index: list[bytes] = []

        def data_parts() -> Iterator[bytes]:
            yield encoder.data_header_bytes
            yield encoder.append(-1, metadata.SerializeToString())
            for entry_id, payload in enumerate(ledger_payloads(handle, _READ_BATCH_BYTES)):
                yield encoder.append(entry_id, payload)
            tail, index_bytes = encoder.finish()
            index.append(index_bytes)
            yield tail

        info = self.driver.write(f"{directory}/{DATA}", _coalesced(data_parts(), data_crc), metadata={})
        index_bytes = index[0]
        if self.checksum_files:
            self.driver.write(f"{directory}/{crc_file_name(DATA)}", [data_crc.finish()], metadata={})
            index_crc = CrcWriter()
            index_crc.update(index_bytes)
            self.driver.write(f"{directory}/{crc_file_name(INDEX)}", [index_crc.finish()], metadata={})
        self.driver.write(f"{directory}/{INDEX}", [index_bytes], metadata={})  # the commit point: last
        return info.size

    # -- read ----------------------------------------------------------------

    def read_offloaded(
        self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> MapFileReadHandle:
        """Open an offloaded MapFile ledger. Raises :class:`NotFoundError`
        when its ``data`` is not there, :class:`FormatError` naming the
        file and offset when ``index`` is missing or damaged, key -1 is not
        the ledger's ``LedgerMetadataFormat``, the files disagree or a
        file fails its ``.crc`` file (checked whenever one is there: the
        whole ``index`` here, the chunks of ``data`` each read touches)."""
        directory = self.directory(ledger_id, uuid, driver_metadata)
        data_key, index_key = f"{directory}/{DATA}", f"{directory}/{INDEX}"
        try:
            data_size = self.driver.stat(data_key).size
        except NotFoundError as exc:
            raise NotFoundError(
                f"offloaded ledger {ledger_id} is not in the store: {data_key!r} is missing "
                "(wrong uuid, managed ledger name or fileSystemURI/hadoop.tmp.dir, or the ledger was deleted)",
                key=data_key,
            ) from exc
        try:
            index_size = self.driver.stat(index_key).size
        except NotFoundError:
            raise FormatError(
                f"{index_key}: missing beside {data_key!r}: an offload that never finished, not a ledger; "
                "delete the directory with `offload ledgers rm`"
            ) from None
        if index_size > _MAX_INDEX_SIZE:
            raise FormatError(f"{index_key}: {index_size} bytes, larger than any index ({_MAX_INDEX_SIZE}) could be")
        index = decode_index(self._checked_index(index_key), index_key)
        reader = checksummed(self.driver, data_key, data_size) if self.check_checksums else self.driver
        data = ObjectBytes(reader, data_key, data_size, buffer_size=self.read_buffer_size, pool=None,
                           corrupt=lambda at, problem: FormatError(f"{data_key}: byte {at}: {problem}"))  # fmt: skip
        header, header_end = _read_header(data, data_size, data_key)
        index.check_offsets(header_end, data_size, index_key)
        if not index.keys or index.keys[0] != -1:
            raise FormatError(f"{index_key}: first key is {index.keys[:1]}, not -1 (the ledger metadata)")
        first = read_unit(data, header, index.offsets[0], data_size, data_key, None)
        _, raw = _first_record(first, data_key)
        try:
            metadata = parse_ledger_metadata(raw)
        except FormatError as exc:
            raise FormatError(
                f"{data_key}: key -1 at byte {first.offset} is not a LedgerMetadataFormat: {exc}"
            ) from None
        data.close()
        return MapFileReadHandle(ledger_id, metadata, driver=reader, data_key=data_key, header=header,
                                 data_size=data_size, index=index, read_buffer_size=self.read_buffer_size,
                                 read_ahead=self.read_ahead)  # fmt: skip

    def _checked_index(self, index_key: str) -> bytes:
        """``index``, checked against its ``.crc`` file when there is one."""
        index = self.driver.read(index_key)
        if not self.check_checksums:
            return index
        try:
            crc = self.driver.read(crc_file_name(index_key))
        except NotFoundError:
            return index
        check_crc_file(crc, index, index_key)
        return index

    # -- delete --------------------------------------------------------------

    def delete_offloaded(
        self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> None:
        """Delete the ledger's directory (every file in it, as Pulsar's
        recursive delete does); idempotent."""
        directory = self.directory(ledger_id, uuid, driver_metadata)
        delete_mapfile_files(self.driver, directory, [info.key for info in self.driver.list(directory + "/")])
        self._event("offload.deleted", ledger_id=ledger_id, uuid=str(uuid))


def delete_mapfile_files(driver: StorageDriver, directory: str, keys: Iterable[str]) -> None:
    """Delete ``keys``, files of the MapFile ledger ``directory``: its
    ``index`` first and alone (deleted whether listed or not), then the
    checksum files, then ``data`` last (the reverse of the writes, so what a
    cut-short deletion leaves is at most ``data``). ``index`` is the
    offload's commit point (written last), so
    a deletion cut short leaves a directory without it, which every reader
    refuses as unfinished and ``orphans`` and ``sweep`` list again, never
    one whose ``index`` points into files that are gone. Every way of
    deleting a MapFile ledger goes through here. Idempotent; raises what
    the driver raises."""
    index_key, data_key = f"{directory}/{INDEX}", f"{directory}/{DATA}"
    driver.delete([index_key])
    keys = list(keys)
    driver.delete([key for key in keys if key not in (index_key, data_key)])
    if data_key in keys:
        driver.delete([data_key])


def _managed_ledger_name(metadata: Mapping[str, str] | None) -> str:
    """The managed ledger's name, under Pulsar's key in any case; "" if none."""
    for key, value in (metadata or {}).items():
        if key.lower() == MANAGED_LEDGER_NAME.lower():
            return value
    return ""


def _coalesced(parts: Iterator[bytes], crc: CrcWriter) -> Iterator[bytes]:
    """``parts`` joined into writes of at least ``_WRITE_SIZE`` bytes (a
    RECORD file is one small part per entry), checksummed on the way."""
    pending: list[bytes] = []
    size = 0
    for part in parts:
        pending.append(part)
        size += len(part)
        if size >= _WRITE_SIZE:
            joined = b"".join(pending)
            crc.update(joined)
            yield joined
            pending, size = [], 0
    if size:
        joined = b"".join(pending)
        crc.update(joined)
        yield joined


def _read_header(data: ObjectBytes, size: int, name: str) -> tuple[Header, int]:
    count = min(4096, size)
    while True:
        if count == 0:
            raise FormatError(f"{name}: empty, not a SequenceFile")
        buffer, at, available = data.get(0, count)
        try:
            header, end = decode_header(memoryview(buffer)[at : at + available])
        except ShortInput as short:
            if available + short.needed > size:
                raise FormatError(f"{name}: cut short inside its header ({size} bytes)") from None
            count = available + short.needed
            continue
        except FormatError as exc:
            raise FormatError(f"{name}: header: {exc}") from None
        check_data_header(header, name)
        return header, end


def _first_record(unit: Unit, name: str) -> tuple[int, bytes]:
    entries = unit_entries(unit, name)
    if entries[0][0] != -1:
        raise FormatError(f"{name}: the first key, at byte {unit.offset}, is {entries[0][0]}, not -1 (the metadata)")
    return entries[0]
