"""PIP-17: the blob-store LedgerOffloader, byte-compatible with Pulsar's.

One ledger is offloaded as a data object (one multipart part per block)
and an index object; see :mod:`offload_core.formats.pulsar_v1`. The same
offloader streams PIP-76 segments (:meth:`BlobStoreLedgerOffloader.streaming_offload`,
see :mod:`offload_core.offload.segments.streaming_offload`) and reads them back.
"""

from __future__ import annotations

import logging
import uuid as uuid_module
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

from ..errors import ConfigError, FormatError, InvalidMetadataError, NotFoundError
from ..formats import entry_offsets
from ..formats import pulsar_v1 as v1
from ..formats.entry_offsets import EntryOffsets
from ..hooks import Event, OffloaderRegistrar, hookimpl
from ..proto import LedgerMetadataFormat
from ..retry import RetryPolicy, call_with_retries
from ..storage import StorageDriver
from .ledgers.built_ahead import BuiltAhead
from .ledgers.ledger_payloads import ledger_payloads, recorded
from .offloader_base import OffloaderBase
from .reading.block_tables import index_entry_offsets
from .reading.offloaded_read_handle import OffloadedReadHandle
from .reading.read_ahead import ReadAheadPool
from .reading.read_handle import ReadHandle
from .segments.segment_offloader import SegmentStreaming, StreamingOffloader

__all__ = [
    "DEFAULT_MAX_BLOCK_SIZE",
    "DEFAULT_READ_BUFFER_SIZE",
    "BlobStoreLedgerOffloader",
    "LedgerOffloader",
    "OffloadResult",
    "StreamingOffloader",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_BLOCK_SIZE = 64 * 2**20
DEFAULT_READ_BUFFER_SIZE = 2**20
DEFAULT_MAX_INDEX_SIZE = 16 * 2**20
DEFAULT_RETRY = RetryPolicy()
T = TypeVar("T")


@dataclass(frozen=True)
class OffloadResult:
    """Where a ledger went: its uuid, object keys, and the driver metadata
    to keep in the ledger's ``OffloadContext``."""

    ledger_id: int
    uuid: str
    data_key: str
    index_key: str
    blocks: int
    data_object_length: int
    driver_metadata: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class LedgerOffloader(Protocol):
    """PIP-17's LedgerOffloader: move a closed ledger to long-term storage
    and read it back. ``offload`` raises :class:`StateError` for an open or
    empty ledger and leaves no object behind when it fails;
    ``read_offloaded`` raises :class:`NotFoundError` for a ledger that is
    not there and :class:`FormatError` for one that does not decode;
    ``delete_offloaded`` is idempotent. ``offload_core.testing``'s
    ``OffloaderContract`` proves an implementation keeps this."""

    def offload(
        self, handle: ReadHandle, uuid: uuid_module.UUID | str, extra_metadata: Mapping[str, str] | None = None
    ) -> OffloadResult: ...

    def read_offloaded(
        self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> ReadHandle: ...

    def delete_offloaded(
        self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> None: ...

    def driver_metadata(self) -> Mapping[str, str]:
        """What to record with each offloaded ledger so that it is found
        again (Pulsar's ``getOffloadDriverMetadata``); passed back to
        ``read_offloaded`` and ``delete_offloaded``."""
        ...

    def close(self) -> None: ...


class BlobStoreLedgerOffloader(SegmentStreaming, OffloaderBase):
    """PIP-17 on any :class:`StorageDriver`.

    ``max_block_size`` and ``read_buffer_size`` are Pulsar's
    ``managedLedgerOffloadMaxBlockSizeInBytes`` (64 MiB) and
    ``managedLedgerOffloadReadBufferSizeInBytes`` (1 MiB); ``prefix`` is put
    before every object key. What objects can make a reader allocate is
    capped: a block may be at most twice ``max_block_size`` (and at least
    128 MiB is always allowed), an index at most ``max_index_size`` bytes
    and no larger than its data object could need. Every storage request is counted (``requests``)
    and, when ``emit`` is given, reported as a ``storage.request`` event;
    offloads also report ``offload.started`` / ``offload.finished`` /
    ``offload.failed``.

    ``entry_offsets`` writes the entry-offsets section after each index's
    block table (see :mod:`offload_core.formats.entry_offsets`; Pulsar's
    readers skip it), so that a cold random read is one GET; switched off,
    the index is byte for byte what Pulsar writes. Sequential reads are
    served from ``read_ahead`` (a pool of its own when not given; give one
    pool to every offloader of a process to bound the process), which
    :meth:`close` closes only if it made it.
    """

    def __init__(
        self,
        driver: StorageDriver,
        *,
        max_block_size: int = DEFAULT_MAX_BLOCK_SIZE,
        read_buffer_size: int = DEFAULT_READ_BUFFER_SIZE,
        prefix: str = "",
        retry: RetryPolicy = DEFAULT_RETRY,
        emit: Callable[[Event], None] | None = None,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
        entry_offsets: bool = True,
        read_ahead: ReadAheadPool | None = None,
    ) -> None:
        _check_size(
            "managedLedgerOffloadMaxBlockSizeInBytes", max_block_size, v1.BLOCK_HEADER_LENGTH + v1.ENTRY_HEADER_LENGTH
        )
        _check_size("managedLedgerOffloadReadBufferSizeInBytes", read_buffer_size, 1)
        if not isinstance(prefix, str):
            raise ConfigError(f"offload prefix must be a string, got {prefix!r}")
        if max_block_size < driver.min_part_size:
            raise ConfigError(
                f"managedLedgerOffloadMaxBlockSizeInBytes is {max_block_size}, below the {driver.name or 'store'}'s "
                f"minimum multipart part size of {driver.min_part_size} bytes ({driver.min_part_size >> 20} MiB); "
                "raise it (Pulsar's default is 64 MiB)"
            )
        self.max_block_size = max_block_size
        self.block_limit = max(2 * max_block_size, 2 * DEFAULT_MAX_BLOCK_SIZE)
        self.max_index_size = max_index_size
        self.read_buffer_size = read_buffer_size
        self.retry = retry
        self.entry_offsets = entry_offsets
        super().__init__(driver, prefix=prefix, emit=emit, read_ahead=read_ahead)

    def __repr__(self) -> str:
        return f"BlobStoreLedgerOffloader({self.driver.inner!r}, prefix={self.prefix!r})"

    def keys(self, ledger_id: int, uuid: uuid_module.UUID | str, prefix: str | None = None) -> tuple[str, str]:
        """The data and index keys of an offloaded ledger."""
        text = str(uuid)
        base = self.prefix if prefix is None else prefix
        return base + v1.data_key(text, ledger_id), base + v1.index_key(text, ledger_id)

    # -- offload -------------------------------------------------------------

    def offload(
        self, handle: ReadHandle, uuid: uuid_module.UUID | str, extra_metadata: Mapping[str, str] | None = None
    ) -> OffloadResult:
        """Offload the closed ledger behind ``handle`` under ``uuid``.

        Streams blocks from the handle into one multipart write, the next
        block read and framed (on a thread of the offload's own, so
        ``handle`` must allow reads from another thread, one at a time)
        while the current one is written; memory stays near two blocks
        whatever the ledger size. Then writes the index. Raises
        :class:`StateError` for an open or empty ledger and
        :class:`FormatError` when an entry fits no block or the entries do
        not match the ledger metadata; on any failure at any stage both
        objects are removed before the error propagates.
        """
        ledger_id = handle.ledger_id
        metadata = handle.metadata
        self._check_offloadable(handle)
        user_metadata = _object_metadata(extra_metadata)
        data_key, index_key = self.keys(ledger_id, uuid)
        table: list[v1.IndexEntry] = []
        with self._offloading(ledger_id, uuid, data_key, [data_key, index_key]):
            blocks = v1.encode_data_blocks(
                ledger_payloads(handle, self.max_block_size),
                entry_count=handle.last_entry_id + 1,
                ledger_length=handle.length,
                max_block_size=self.max_block_size,
            )
            lengths: list[Sequence[int]] = []
            # The next block is read and framed while this one is written:
            # the write mostly waits on the store, the framing on the CPU.
            with BuiltAhead(blocks, name=f"offload-core-blocks-{ledger_id}") as ahead:
                data_info = self.driver.write(data_key, recorded(ahead, table, lengths), metadata=user_metadata)
            index = v1.Index(
                data_object_length=data_info.size,
                ledger_metadata=_without_password(metadata).SerializeToString(),
                entries=tuple(table),
                trailer=entry_offsets.encode_section(lengths) if self.entry_offsets else b"",
            )
            self.driver.write(index_key, v1.encode_index(index), metadata=user_metadata)
        self._event("offload.finished", ledger_id=ledger_id, uuid=str(uuid), bytes=data_info.size, blocks=len(table))
        return OffloadResult(
            ledger_id=ledger_id,
            uuid=str(uuid),
            data_key=data_key,
            index_key=index_key,
            blocks=len(table),
            data_object_length=data_info.size,
            driver_metadata=self.driver_metadata(),
        )

    def _delete(self, keys: list[str]) -> None:
        """Delete ``keys``, retrying transient errors as :attr:`retry` says."""
        call_with_retries(lambda: self.driver.delete(keys), self.retry)

    # -- read ----------------------------------------------------------------

    def read_offloaded(
        self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> OffloadedReadHandle:
        """Open an offloaded ledger for reading.

        Loads the index (retrying transient errors a bounded number of
        times) and checks the format version on both objects. Raises
        :class:`NotFoundError` naming the ledger when an object is missing,
        :class:`FormatError` for an unknown version or a corrupt index. A
        data object whose size differs from its index's is opened anyway:
        the handle serves every entry that is intact and raises
        :class:`LostEntriesError` for the ones that are not.
        ``driver_metadata`` (as returned by :meth:`offload`) chooses the key
        prefix the ledger was written under.
        """
        prefix = (driver_metadata or {}).get("prefix", self.prefix)
        data_key, index_key = self.keys(ledger_id, uuid, prefix)
        index_info = self._retrying(lambda: self.driver.stat(index_key), ledger_id, index_key)
        _check_version(index_info.metadata, index_key)
        data_info = self._retrying(lambda: self.driver.stat(data_key), ledger_id, data_key)
        _check_version(data_info.metadata, data_key)
        try:
            v1.check_index_size(index_info.size, data_info.size, limit=self.max_index_size)
            index = v1.decode_index(self._retrying(lambda: self.driver.read(index_key), ledger_id, index_key))
            v1.check_block_spans(index, self.block_limit)
        except FormatError as exc:
            raise FormatError(f"offloaded ledger {ledger_id}, index {index_key!r}: {exc}") from None
        if data_info.size != index.data_object_length:
            # Cut short (a lost tail) or longer (Pulsar's index after an entry
            # too large for a block): the entries both agree on stay readable;
            # reading the others raises LostEntriesError naming them.
            log.warning(
                "offloaded ledger %s: data object %r is %s bytes, its index says %s; entries past the shorter of "
                "the two cannot be read", ledger_id, data_key, data_info.size, index.data_object_length,
            )  # fmt: skip
        return OffloadedReadHandle(ledger_id, index, self.driver, data_key, read_buffer_size=self.read_buffer_size,
                                   object_size=data_info.size, entry_offsets=self._entry_offsets(index, index_key),
                                   read_ahead=self.read_ahead)  # fmt: skip

    def _entry_offsets(self, index: v1.Index, index_key: str) -> EntryOffsets | None:
        """The index's entry-offsets section, when it has a sound one. A
        damaged section costs speed, not data: reads walk instead."""
        try:
            return index_entry_offsets(index)
        except FormatError as exc:
            log.warning("index %r: entry-offsets section ignored, reads walk entry headers instead (%s)", index_key,
                        exc)  # fmt: skip
            return None

    def _retrying(self, action: Callable[[], T], ledger_id: int, key: str) -> T:
        try:
            return call_with_retries(action, self.retry)
        except NotFoundError as exc:
            raise NotFoundError(
                f"offloaded ledger {ledger_id} is not in the store: object {key!r} is missing "
                "(wrong uuid or prefix, or the ledger was deleted)",
                key=key,
            ) from exc

    # -- delete --------------------------------------------------------------

    def delete_offloaded(
        self, ledger_id: int, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> None:
        """Delete both objects of an offloaded ledger; idempotent."""
        prefix = (driver_metadata or {}).get("prefix", self.prefix)
        self._delete(list(self.keys(ledger_id, uuid, prefix)))
        self._event("offload.deleted", ledger_id=ledger_id, uuid=str(uuid))


def _check_size(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= 2**31 - 1:
        raise ConfigError(f"{name} must be an integer from {minimum} to 2147483647, got {value!r}")


def _object_metadata(extra: Mapping[str, str] | None) -> dict[str, str]:
    """The version key plus the caller's metadata, names lowercased as S3
    stores them (Pulsar passes names like ``ManagedLedgerName``)."""
    metadata = {}
    for name, value in (extra or {}).items():
        if name.lower() == v1.FORMAT_VERSION_KEY:
            raise InvalidMetadataError(f"extra metadata may not set {v1.FORMAT_VERSION_KEY!r}; the offloader does")
        metadata[name.lower()] = value
    metadata[v1.FORMAT_VERSION_KEY] = v1.FORMAT_VERSION
    return metadata


def _check_version(metadata: Mapping[str, str], key: str) -> None:
    problem = v1.format_version_problem(metadata)
    if problem is not None:
        raise FormatError(
            f"object {key!r}: {problem}; upgrade offload-core, or check the object was written by a ledger offloader"
        )


def _without_password(metadata: LedgerMetadataFormat) -> LedgerMetadataFormat:
    if not metadata.HasField("password"):
        return metadata
    copy = LedgerMetadataFormat()
    copy.CopyFrom(metadata)
    copy.ClearField("password")
    return copy


@hookimpl
def offload_core_register_offloaders(register: OffloaderRegistrar) -> None:
    from .stored.pulsar_ledgers import PULSAR_LEDGERS
    from .stored.pulsar_segments import PULSAR_SEGMENTS

    register(BlobStoreLedgerOffloader, name="blobstore", aliases=("jcloud", "pip-17"), drivers=("*",),
             stored=(PULSAR_LEDGERS, PULSAR_SEGMENTS))  # fmt: skip
