"""The values a PIP-76 streaming offload takes and gives: segment limits,
the runs a batch of offered entries falls into, what became of an offered
entry, and a finished segment."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ...errors import ConfigError
from ...formats import pulsar_v1 as v1

__all__ = [
    "LedgerInfoSource",
    "OfferResult",
    "SegmentLedgerRange",
    "SegmentLimits",
    "StreamingOffloadResult",
    "entry_runs",
]

LedgerInfoSource = Callable[[int, int], bytes]
"""``(ledger id, its last entry in the segment) -> LedgerInfo bytes`` for the
segment index (see :func:`pulsar_v2.ledger_info_bytes`)."""


class OfferResult(enum.Enum):
    """What became of an offered entry (Pulsar's ``OfferEntryResult``)."""

    SUCCESS = "success"
    FAIL_BUFFER_FULL = "buffer full"
    FAIL_SEGMENT_CLOSED = "segment closed"
    FAIL_NOT_CONSECUTIVE = "not consecutive"


@dataclass(frozen=True)
class SegmentLimits:
    """When a segment closes and how much it may buffer.

    ``max_segment_size`` (bytes of data object, Pulsar's
    ``maxSizePerOffloadSegmentMbytes``) and ``max_segment_age`` (seconds
    since the segment opened, ``maxOffloadSegmentRolloverTimeMinutes``)
    close it; ``max_buffer_size`` bounds the bytes held for the upload and
    must leave room for two blocks. Raises :class:`ConfigError`."""

    streaming_block_size: int = 64 * 2**20
    max_segment_size: int = 1024 * 2**20
    max_segment_age: float = 600 * 60.0
    max_buffer_size: int = 256 * 2**20

    def __post_init__(self) -> None:
        floor = v1.BLOCK_HEADER_LENGTH + v1.ENTRY_HEADER_LENGTH
        if self.streaming_block_size < floor:
            raise ConfigError(f"streaming block size {self.streaming_block_size} cannot hold a header and an entry")
        if self.max_segment_size < self.streaming_block_size:
            raise ConfigError(
                f"maxSizePerOffloadSegmentMbytes ({self.max_segment_size} bytes) is below one streaming block "
                f"({self.streaming_block_size} bytes); raise it"
            )
        if not self.max_segment_age > 0:
            raise ConfigError(f"maxOffloadSegmentRolloverTimeMinutes must be positive, got {self.max_segment_age}s")
        if self.max_buffer_size < 2 * self.streaming_block_size:
            raise ConfigError(
                f"the streaming offload buffer ({self.max_buffer_size} bytes) must hold two streaming blocks "
                f"({2 * self.streaming_block_size} bytes); raise it or lower the block size"
            )


@dataclass(frozen=True)
class SegmentLedgerRange:
    """The entries ``first_entry_id..last_entry_id`` of one ledger in a segment."""

    ledger_id: int
    first_entry_id: int
    last_entry_id: int


@dataclass(frozen=True)
class StreamingOffloadResult:
    """A finished segment: Pulsar's ``OffloadResult`` (begin/end ledger and
    entry) plus what a reader needs to find it again."""

    uuid: str
    begin_ledger_id: int
    begin_entry_id: int
    end_ledger_id: int
    end_entry_id: int
    ledgers: tuple[SegmentLedgerRange, ...]
    blocks: int
    data_object_length: int
    data_key: str
    index_key: str
    driver_metadata: Mapping[str, str] = field(default_factory=dict)


def entry_runs(ledger_ids: Sequence[int], entry_ids: Sequence[int]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of each run of consecutive entries of one ledger in
    a batch given by its entries' ledger ids and entry ids, in order. A
    batch is mostly one run, which is recognised without a Python step per
    entry; any other is walked once."""
    count = len(ledger_ids)
    if not count:
        return
    first_ledger, first = ledger_ids[0], entry_ids[0]
    if ledger_ids.count(first_ledger) == count and tuple(entry_ids) == tuple(range(first, first + count)):
        yield 0, count
        return
    start = 0
    while start < count:
        ledger_id, first = ledger_ids[start], entry_ids[start]
        end = start + 1
        while end < count and ledger_ids[end] == ledger_id and entry_ids[end] == first + end - start:
            end += 1
        yield start, end
        start = end
