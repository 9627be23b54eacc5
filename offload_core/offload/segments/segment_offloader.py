"""The streaming (PIP-76) half of the blob-store offloader: open a segment
for streaming, read a ledger's entries back from one, delete one."""

from __future__ import annotations

import time
import uuid as uuid_module
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from ...errors import ConfigError
from ...formats import pulsar_v1 as v1
from ...formats import pulsar_v2 as v2
from ...hooks import Event
from ...instrument import InstrumentedDriver
from ...retry import RetryPolicy, call_with_retries
from ..reading.offloaded_read_handle import OffloadedReadHandle
from ..reading.read_ahead import ReadAheadPool
from ..reading.read_handle import ReadHandle
from .segment_reads import OpenSegment, open_segment, segment_ledger_handle
from .streaming_offload import LedgerInfoSource, OffloadHandle, SegmentLimits

__all__ = ["SegmentStreaming", "StreamingOffloader"]


@runtime_checkable
class StreamingOffloader(Protocol):
    """An offloader that also streams PIP-76 segments (the blob-store one
    does): what a managed ledger with streaming offload on needs."""

    def streaming_offload(
        self,
        uuid: uuid_module.UUID | str,
        driver_metadata: Mapping[str, str] | None = None,
        *,
        limits: SegmentLimits | None = None,
        ledger_info: LedgerInfoSource | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_room: Callable[[], None] | None = None,
    ) -> OffloadHandle: ...

    def read_segment(
        self,
        uuid: uuid_module.UUID | str,
        ledger_id: int,
        driver_metadata: Mapping[str, str] | None = None,
        *,
        last_entry_id: int | None = None,
    ) -> ReadHandle: ...

    def delete_segment(
        self, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> None: ...

    def segment_size(self, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None) -> int: ...


class SegmentStreaming:
    """Streaming methods of :class:`~offload_core.offload.ledger.BlobStoreLedgerOffloader`
    (which sets the attributes below)."""

    driver: InstrumentedDriver
    prefix: str
    max_block_size: int
    max_index_size: int
    block_limit: int
    read_buffer_size: int
    entry_offsets: bool
    read_ahead: ReadAheadPool
    retry: RetryPolicy
    _emit: Callable[[Event], None] | None
    driver_metadata: Callable[[], dict[str, str]]
    _event: Callable[..., None]

    def streaming_offload(
        self,
        uuid: uuid_module.UUID | str,
        driver_metadata: Mapping[str, str] | None = None,
        *,
        limits: SegmentLimits | None = None,
        ledger_info: LedgerInfoSource | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_room: Callable[[], None] | None = None,
    ) -> OffloadHandle:
        """Open segment ``uuid`` for streaming (see :class:`OffloadHandle`).
        ``limits`` default to blocks of this offloader's max block size.
        Raises :class:`ConfigError` for a block size below the store's
        minimum multipart part size."""
        limits = limits or SegmentLimits(
            streaming_block_size=self.max_block_size, max_buffer_size=max(4 * self.max_block_size, 256 * 2**20)
        )
        if limits.streaming_block_size < self.driver.min_part_size:
            raise ConfigError(
                f"streaming block size {limits.streaming_block_size} is below the {self.driver.name or 'store'}'s "
                f"minimum multipart part size of {self.driver.min_part_size} bytes; raise it"
            )
        metadata = dict(driver_metadata or self.driver_metadata())
        return OffloadHandle(
            self.driver,
            str(uuid),
            prefix=metadata.get("prefix", self.prefix),
            limits=limits,
            object_metadata={v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION},
            driver_metadata=metadata,
            ledger_info=ledger_info,
            clock=clock,
            retry=self.retry,
            emit=self._emit,
            on_room=on_room,
            entry_offsets=self.entry_offsets,
        )

    def open_segment(
        self, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None
    ) -> OpenSegment:
        """Load a segment's index (see :func:`segment_reads.open_segment` for what is raised)."""
        prefix = (driver_metadata or {}).get("prefix", self.prefix)
        return open_segment(self.driver, str(uuid), prefix=prefix, max_index_size=self.max_index_size,
                            block_limit=self.block_limit, retry=self.retry)  # fmt: skip

    def read_segment(
        self,
        uuid: uuid_module.UUID | str,
        ledger_id: int,
        driver_metadata: Mapping[str, str] | None = None,
        *,
        last_entry_id: int | None = None,
    ) -> OffloadedReadHandle:
        """A read handle over ledger ``ledger_id``'s entries in segment
        ``uuid``; ``last_entry_id`` is its last there when known. Raises as
        :meth:`open_segment`, and :class:`InvalidRangeError` if the segment
        holds none of the ledger."""
        segment = self.open_segment(uuid, driver_metadata)
        return segment_ledger_handle(self.driver, segment, ledger_id, last_entry_id=last_entry_id,
                                     read_buffer_size=self.read_buffer_size, read_ahead=self.read_ahead)  # fmt: skip

    def segment_size(self, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None) -> int:
        """Bytes of the segment's data object (one stat). Raises
        :class:`NotFoundError` if it is not there."""
        prefix = (driver_metadata or {}).get("prefix", self.prefix)
        return call_with_retries(lambda: self.driver.stat(prefix + v2.segment_data_key(str(uuid))), self.retry).size

    def delete_segment(self, uuid: uuid_module.UUID | str, driver_metadata: Mapping[str, str] | None = None) -> None:
        """Delete a segment's objects (its entry offsets too); idempotent."""
        prefix = (driver_metadata or {}).get("prefix", self.prefix)
        keys = [prefix + key(str(uuid)) for key in
                (v2.segment_data_key, v2.segment_index_key, v2.segment_entry_offsets_key)]  # fmt: skip
        call_with_retries(lambda: self.driver.delete(keys), self.retry)
        self._event("offload.deleted", uuid=str(uuid), streaming=True)
