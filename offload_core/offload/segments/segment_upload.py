"""The upload half of a streamed segment (see :mod:`.streaming_offload`).

A :class:`SegmentUpload` takes a segment's finished blocks in order and
sends them to the store as one multipart write, one part per block, on a
thread of its own: a multipart write stays open for the segment's whole
life (up to its rollover time), which would pin a thread of the broker's
small background pool for that long. Once every block is sent, the entry
offsets follow them as the data object's last part, past the length the
index records (Pulsar's readers read a data object only up to that length,
and its ``deleteOffloaded`` removes exactly the data and index objects, so
a segment Pulsar deletes leaves nothing behind); then the index is
written. A failure or an abort removes every object of the segment.

Its queue has a lock of its own, held only to put or take a block: the
:class:`~.streaming_offload.OffloadHandle` that feeds it holds its lock
for the whole of an offer (the framing of up to a megabyte of entries),
and an upload thread that needed that lock to take the next block waited
for the offers to stop (measured: for 64 MB of 1 KB entries, the first
part went to the store only once every entry was offered).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ...errors import OffloadError, StateError
from ...formats import entry_offsets
from ...formats import pulsar_v2 as v2
from ...hooks import Event
from ...retry import RetryPolicy, call_with_retries
from ...storage import StorageDriver
from .segment_types import LedgerInfoSource, SegmentLedgerRange, StreamingOffloadResult

log = logging.getLogger(__name__)

__all__ = ["SegmentKeys", "SegmentUpload"]


@dataclass(frozen=True)
class SegmentKeys:
    """Where a segment's objects go, and whether the data object ends with
    the entry-offsets section."""

    data: str
    index: str
    entry_offsets: bool

    def all(self) -> list[str]:
        return [self.data, self.index]


class SegmentUpload:
    """Sends a segment's blocks as they are finished, then completes it.

    :meth:`put`, :meth:`complete` and :meth:`abort` are called with the
    feeding handle's ``lock`` held (the upload thread takes it only when
    the upload fails: locks are taken in that order). ``on_room`` is
    called (on the upload thread, without a lock) each time a sent part
    leaves the buffer; it must not block. ``on_failure`` is called with
    ``lock`` held when the upload fails or is aborted, after which
    nothing is taken any more.
    """

    def __init__(
        self,
        driver: StorageDriver,
        uuid: str,
        *,
        keys: SegmentKeys,
        lock: threading.Lock,
        object_metadata: Mapping[str, str],
        driver_metadata: Mapping[str, str],
        ledger_info: LedgerInfoSource,
        retry: RetryPolicy,
        emit: Callable[[Event], None] | None,
        on_room: Callable[[], None] | None,
        on_failure: Callable[[], None],
    ) -> None:
        self.uuid = uuid
        self.keys = keys
        self._driver = driver
        self._object_metadata = dict(object_metadata)
        self._driver_metadata = dict(driver_metadata)
        self._ledger_info = ledger_info
        self._retry = retry
        self._emit = emit
        self._on_room = on_room
        self._on_failure = on_failure
        self._handle_lock = lock
        self._changed = threading.Condition(threading.Lock())
        self._queue: deque[bytes] = deque()
        self._queued_bytes = 0
        self._in_flight = 0
        self._rows: list[tuple[int, v2.SegmentRow]] = []
        self._lengths: list[Sequence[int]] = []
        self._blocks_length = 0
        self._ranges: tuple[SegmentLedgerRange, ...] = ()
        self._complete = False
        self._aborted = False
        self._done = threading.Event()
        self._result: StreamingOffloadResult | None = None
        self._error: BaseException | None = None
        threading.Thread(target=self._run, name=f"offload-core-segment-{uuid}", daemon=True).start()

    # -- fed by the offering side, with the handle's lock held ------------------

    @property
    def busy(self) -> bool:
        """Whether a block waits for the store or is being sent."""
        with self._changed:
            return bool(self._queue or self._in_flight)

    def buffered_bytes(self) -> int:
        """Bytes of the blocks queued and of the part being sent. Only
        ever falls between two calls of :meth:`put`."""
        with self._changed:
            return self._queued_bytes + self._in_flight

    def put(self, block: v2.EncodedSegmentBlock) -> None:
        """Queue the segment's next block."""
        with self._changed:
            self._rows.append((block.ledger_id, block.row))
            if self.keys.entry_offsets:
                self._lengths.append(block.entry_lengths)
            self._blocks_length += len(block.data)
            self._queue.append(block.data)
            self._queued_bytes += len(block.data)
            self._changed.notify_all()

    def complete(self, ranges: tuple[SegmentLedgerRange, ...]) -> None:
        """Every block is queued; ``ranges`` are the segment's ledgers."""
        with self._changed:
            self._complete, self._ranges = True, ranges
            self._changed.notify_all()

    def abort(self) -> None:
        """Stop: the upload is cancelled and its objects removed."""
        with self._changed:
            self._aborted = self._complete = True
            self._changed.notify_all()

    # -- the result ---------------------------------------------------------------

    def result(self, timeout: float | None = None) -> StreamingOffloadResult | None:
        """Wait for the segment to be durable. Raises :class:`StateError` if
        ``timeout`` runs out, or the upload's error."""
        if not self._done.wait(timeout):
            raise StateError(f"segment {self.uuid} is still being uploaded after {timeout}s")
        if self._error is not None:
            raise self._error
        return self._result

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self) -> None:
        self._done.wait()

    # -- the upload thread --------------------------------------------------------

    def _next_block(self) -> bytes | None:
        """The next block to send (``None``: the segment is complete),
        releasing the previous one from the buffer count."""
        with self._changed:
            sent, self._in_flight = self._in_flight, 0
        # Told only once the part is out of the buffer count: an offer the
        # notice starts must see the room, or it is refused again with no
        # part left to send and so no notice to come (the stream stalls).
        if sent and self._on_room is not None:
            try:
                self._on_room()
            except Exception as exc:  # the caller's notification must not fail the upload
                log.warning("segment %s: the buffer-room callback failed: %s", self.uuid, exc)
        with self._changed:
            self._changed.wait_for(lambda: bool(self._queue) or self._complete)
            if self._aborted:
                raise _Aborted(f"segment {self.uuid} was aborted")
            if not self._queue:
                return None
            block = self._queue.popleft()
            self._queued_bytes -= len(block)
            self._in_flight = len(block)
            return block

    def _parts(self, first: bytes) -> Iterator[bytes]:
        yield first
        while (block := self._next_block()) is not None:
            yield block
        if self.keys.entry_offsets:
            # Every block is with the driver, so every entry's length is known.
            with self._changed:
                lengths = list(self._lengths)
            yield entry_offsets.encode_section(lengths)

    def _run(self) -> None:
        try:
            first = self._next_block()
            if first is None:
                return
            self._event("offload.started", uuid=self.uuid, key=self.keys.data)
            info = self._driver.write(self.keys.data, self._parts(first), metadata=self._object_metadata)
            with self._changed:
                blocks_length = self._blocks_length
            self._result = self._write_index(blocks_length)
            self._event("offload.finished", uuid=self.uuid, bytes=info.size, blocks=len(self._rows))
        except BaseException as exc:
            self._error = exc
            with self._handle_lock, self._changed:
                self._aborted = self._complete = True
                self._queue.clear()
                self._queued_bytes = 0
                self._on_failure()
            self._remove_quietly(exc)
            self._event("offload.failed", uuid=self.uuid, error=type(exc).__name__)
        finally:
            with self._changed:
                self._in_flight = 0
            self._done.set()

    def _write_index(self, data_object_length: int) -> StreamingOffloadResult:
        with self._changed:
            rows, ranges = list(self._rows), self._ranges
        index = v2.index_for_blocks(
            rows,
            data_object_length=data_object_length,
            ledger_infos={r.ledger_id: self._ledger_info(r.ledger_id, r.last_entry_id) for r in ranges},
        )
        self._driver.write(self.keys.index, v2.encode_index(index), metadata=self._object_metadata)
        return StreamingOffloadResult(
            uuid=self.uuid,
            begin_ledger_id=ranges[0].ledger_id,
            begin_entry_id=ranges[0].first_entry_id,
            end_ledger_id=ranges[-1].ledger_id,
            end_entry_id=ranges[-1].last_entry_id,
            ledgers=ranges,
            blocks=len(rows),
            data_object_length=data_object_length,
            data_key=self.keys.data,
            index_key=self.keys.index,
            driver_metadata=self._driver_metadata,
        )

    def _remove_quietly(self, cause: BaseException) -> None:
        keys = self.keys.all()
        try:
            call_with_retries(lambda: self._driver.delete(keys), self._retry)
        except OffloadError as exc:
            cause.add_note(f"cleanup after the failed segment {self.uuid} also failed ({exc}); delete {keys} by hand")

    def _event(self, kind: str, **fields: object) -> None:
        if self._emit is not None:
            self._emit(Event(kind, {"streaming": True, **fields}))


class _Aborted(StateError):
    """The segment's upload was cancelled."""
