"""One ``kafka-remote`` Spark partition: byte ranges of one or more remote
segments of one topic-partition, in offset order, packed so that a plan of
many small segments stays small on the driver (and in the bytes Spark
pickles per task).

Per range only what a task cannot cheaply recompute is kept, as one
fixed-size record in a ``bytes`` blob: the segment's id (its 22 Kafka
``Uuid`` characters, held as the 18 bytes they decode to once padded), its
base offset (with the partition's prefix and topic id, the segment's key),
the bytes ``[start, stop)`` of its ``.log`` and the offsets ``[first, end)``
to keep from them: 58 bytes, where a range as its own object with a key
string was some 500."""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from pyspark.sql.datasource import InputPartition

from ..formats import kafka
from ..rsm.layout import LOG_SUFFIX, segment_key
from ..rsm.types import RemoteLogSegmentId, TopicIdPartition
from .kafka_remote_aiven import AivenSegmentSpec

__all__ = ["RANGE_BYTES", "SegmentRange", "SegmentRangePartition", "pack_ranges"]

_RANGE = struct.Struct("<18sqqqqq")  # segment id, base offset, start, stop, first, end
RANGE_BYTES = _RANGE.size
# A Kafka Uuid's 22 characters are 132 bits: two more "A"s (zero bits) make 24 characters, 18 whole bytes.
_ID_PAD = "AA"


class SegmentRange(NamedTuple):
    """Bytes ``[start, stop)`` of the ``.log`` of segment ``segment_id``
    (based at ``base_offset``) and the offsets ``[first, end)`` to keep."""

    segment_id: str
    base_offset: int
    start: int
    stop: int
    first: int
    end: int


def pack_ranges(ranges: Iterable[SegmentRange]) -> bytes:
    """``ranges`` as the blob :attr:`SegmentRangePartition.packed` holds."""
    return b"".join(
        _RANGE.pack(base64.urlsafe_b64decode(r.segment_id + _ID_PAD), r.base_offset, r.start, r.stop, r.first, r.end)
        for r in ranges
    )


@dataclass(frozen=True)
class SegmentRangePartition(InputPartition):
    """Ranges of remote ``.log`` objects of ``topic_id_partition``, read in
    order (the store is the reader's: see
    :func:`~offload_core.spark.kafka_remote.read_partition`). ``aborted``
    holds the aborted transactions of every range (read_committed only);
    ``aiven``, for a segment Aiven's plugin wrote, decodes its chunks (such
    a partition holds ranges of that one segment)."""

    topic_id_partition: TopicIdPartition
    prefix: str
    packed: bytes
    aborted: tuple[kafka.AbortedTxn, ...] = ()
    max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT
    fail_on_data_loss: bool = True
    aiven: AivenSegmentSpec | None = None

    @property
    def topic(self) -> str:
        return self.topic_id_partition.topic_partition.topic

    @property
    def partition(self) -> int:
        return self.topic_id_partition.topic_partition.partition

    @property
    def ranges(self) -> list[SegmentRange]:
        return [SegmentRange(base64.urlsafe_b64encode(raw).decode("ascii")[:-2], *rest)
                for raw, *rest in _RANGE.iter_unpack(self.packed)]  # fmt: skip

    @property
    def offset_count(self) -> int:
        """How many offsets the ranges span (their sum, gaps between segments not counted)."""
        return sum(r.end - r.first for r in self.ranges)

    def log_key(self, segment: SegmentRange) -> str:
        """The key of the ``.log`` object holding ``segment``."""
        if self.aiven is not None:
            return self.aiven.manifest_key.with_suffix("log").key
        return segment_key(self.prefix, RemoteLogSegmentId(self.topic_id_partition, segment.segment_id),
                           segment.base_offset, LOG_SUFFIX)  # fmt: skip
