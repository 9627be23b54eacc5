"""Kafka partition directories built with our encoders, the way Kafka's
leader writes them: one batch per append, indexes by Kafka's rules,
producer snapshots named by the next segment's base offset."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import google_crc32c

from offload_core.formats import kafka
from tests.kafka_vectors import KafkaCase

INTERVAL = 4096
# The topic id the partition directories built here carry in partition.metadata.
TOPIC_ID = "5fEBmixCR5-dMntYSLIr1g"


def write_partition_metadata(directory: Path, topic_id: str) -> None:
    """Kafka's partition.metadata, as its PartitionMetadataFile writes it (no trailing newline)."""
    (directory / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}")


def value(offset: int, size: int = 300) -> bytes:
    return (f"value-{offset}-".encode() * (size // 8 + 1))[:size]


def plain_batch(base: int, count: int, *, timestamp: int, epoch: int = 0, size: int = 300) -> bytes:
    records = [kafka.Record(base + i, timestamp + i, f"key-{base + i}".encode(), value(base + i, size),
                            (kafka.Header("h", b"v"),)) for i in range(count)]  # fmt: skip
    return kafka.encode_batch(records, base_offset=base, partition_leader_epoch=epoch)


@dataclass
class SegmentSpec:
    batches: list[bytes]
    aborted: list[kafka.AbortedTxn] = field(default_factory=list)
    snapshot: list[kafka.ProducerSnapshotEntry] = field(default_factory=list)  # producers at the segment's end


def write_segment(directory: Path, base: int, spec: SegmentSpec, next_base: int) -> None:
    log = b"".join(spec.batches)
    name = f"{base:020d}"
    (directory / f"{name}.log").write_bytes(log)
    derived = kafka.derive_indexes(log, base, index_interval_bytes=INTERVAL)
    (directory / f"{name}.index").write_bytes(kafka.encode_offset_index(derived.offset_index, base))
    (directory / f"{name}.timeindex").write_bytes(kafka.encode_time_index(derived.time_index, base))
    if spec.aborted:
        (directory / f"{name}.txnindex").write_bytes(kafka.encode_txn_index(spec.aborted))
    (directory / f"{next_base:020d}.snapshot").write_bytes(kafka.encode_producer_snapshot(spec.snapshot))


def write_partition(root: Path, name: str, segments: list[SegmentSpec], *, epochs: str = "0\n1\n0 0\n",
                    topic_id: str | None = TOPIC_ID) -> Path:  # fmt: skip
    """A partition directory whose last segment is the active one, with a
    partition.metadata naming ``topic_id`` (none for ``None``)."""
    directory = root / name
    directory.mkdir(parents=True)
    if topic_id is not None:
        write_partition_metadata(directory, topic_id)
    base = 0
    for spec in segments:
        next_base = base
        for batch in spec.batches:
            next_base = kafka.decode_batch_header(batch).next_offset
        # A batch's offsets are its own; a segment's base is its first batch's.
        first = kafka.decode_batch_header(spec.batches[0]).base_offset if spec.batches else base
        write_segment(directory, first, spec, next_base)
        base = next_base
    (directory / "leader-epoch-checkpoint").write_text(epochs)
    return directory


def numbered_segments(count: int, *, batches: int = 20, records: int = 5, start_ts: int = 1_700_000_000_000,
                      step_ts: int = 1000) -> list[SegmentSpec]:  # fmt: skip
    """``count`` segments of ``batches`` plain batches of ``records`` records each."""
    specs = []
    offset = 0
    for _ in range(count):
        spec = SegmentSpec([])
        for _ in range(batches):
            spec.batches.append(plain_batch(offset, records, timestamp=start_ts + offset * step_ts))
            offset += records
        specs.append(spec)
    return specs


def transactional_segment() -> SegmentSpec:
    """Producer 77: offsets 0-2 committed (marker at 3), 4-5 aborted (marker
    at 6); then 7-8 non-transactional."""

    def txn(base: int, count: int) -> bytes:
        stamp = 1_700_000_000_000 + base
        records = [kafka.Record(base + i, stamp + i, None, value(base + i, 20)) for i in range(count)]
        return kafka.encode_batch(records, base_offset=base, producer_id=77, producer_epoch=0, base_sequence=base,
                                  transactional=True)  # fmt: skip

    def marker(offset: int, kind: int) -> bytes:
        record = kafka.control_record(kind, offset=offset, timestamp=1_700_000_000_000 + offset)
        return kafka.encode_batch([record], base_offset=offset, producer_id=77, producer_epoch=0,
                                  transactional=True, control=True)  # fmt: skip

    batches = [txn(0, 3), marker(3, kafka.CONTROL_COMMIT), txn(4, 2), marker(6, kafka.CONTROL_ABORT),
               plain_batch(7, 2, timestamp=1_700_000_000_007, size=20)]  # fmt: skip
    return SegmentSpec(batches, [kafka.AbortedTxn(77, 4, 6, 4)])


def undecided_transaction_segments() -> list[SegmentSpec]:
    """Producer 77's transaction (offsets 2-4) rolls into the next segment
    undecided; its ABORT marker (7) is in that next, active segment:
    offsets 0-1 and 5-6 plain in the first, 8-9 plain in the second."""
    stamp = 1_700_000_000_000

    def txn(base: int, count: int) -> bytes:
        records = [kafka.Record(base + i, stamp + base + i, None, value(base + i, 20)) for i in range(count)]
        return kafka.encode_batch(records, base_offset=base, producer_id=77, producer_epoch=0, base_sequence=0,
                                  transactional=True)  # fmt: skip

    abort = kafka.encode_batch([kafka.control_record(kafka.CONTROL_ABORT, offset=7, timestamp=stamp + 7)],
                               base_offset=7, producer_id=77, producer_epoch=0, transactional=True,
                               control=True)  # fmt: skip
    plain = [plain_batch(base, 2, timestamp=stamp + base, size=20) for base in (0, 5, 8)]
    open_at_end = kafka.ProducerSnapshotEntry(77, 0, 2, 4, 2, stamp + 4, -1, 2)
    closed = kafka.ProducerSnapshotEntry(77, 0, 2, 7, 0, stamp + 7, 0, -1)
    return [SegmentSpec([plain[0], txn(2, 3), plain[1]], snapshot=[open_at_end]),
            SegmentSpec([abort, plain[2]], [kafka.AbortedTxn(77, 2, 7, 10)], snapshot=[closed])]  # fmt: skip


def aborted_across_segments() -> list[SegmentSpec]:
    """Transactions decided in a later segment than their records, each
    ``.txnindex`` entry in the segment of its ABORT marker, with the last
    stable offset Kafka's leader records in it (the first offset of the
    transactions still open then, else one past the marker):

    - 0-8: plain 0-1, producer 77's transaction 2-4, producer 88's 5-6, plain 7-8;
    - 9-16: 88's COMMIT 9, 77's transaction goes on 10-11, producer 99's
      transaction 12-13 and its ABORT 14 (77's is still open: stable offset 2), plain 15-16;
    - 17-19: 77's ABORT 17 (stable offset 18), plain 18-19.

    read_uncommitted reads every offset but the markers (9, 14, 17);
    read_committed drops 77's and 99's records as well: 0-1, 5-8, 15-16, 18-19."""
    stamp = 1_700_000_000_000

    def txn(producer: int, base: int, count: int, sequence: int) -> bytes:
        records = [kafka.Record(base + i, stamp + base + i, None, value(base + i, 20)) for i in range(count)]
        return kafka.encode_batch(records, base_offset=base, producer_id=producer, producer_epoch=0,
                                  base_sequence=sequence, transactional=True)  # fmt: skip

    def marker(producer: int, offset: int, kind: int) -> bytes:
        record = kafka.control_record(kind, offset=offset, timestamp=stamp + offset)
        return kafka.encode_batch([record], base_offset=offset, producer_id=producer, producer_epoch=0,
                                  transactional=True, control=True)  # fmt: skip

    def producer(pid: int, sequence: int, last: int, txn_first: int = -1) -> kafka.ProducerSnapshotEntry:
        return kafka.ProducerSnapshotEntry(pid, 0, sequence, last, 0, stamp + last, 0, txn_first)

    def plain(base: int) -> bytes:
        return plain_batch(base, 2, timestamp=stamp + base, size=20)

    first = SegmentSpec([plain(0), txn(77, 2, 3, 0), txn(88, 5, 2, 0), plain(7)],
                        snapshot=[producer(77, 2, 4, 2), producer(88, 1, 6, 5)])  # fmt: skip
    second = SegmentSpec([marker(88, 9, kafka.CONTROL_COMMIT), txn(77, 10, 2, 3), txn(99, 12, 2, 0),
                          marker(99, 14, kafka.CONTROL_ABORT), plain(15)], [kafka.AbortedTxn(99, 12, 14, 2)],
                         snapshot=[producer(77, 4, 11, 2), producer(88, 1, 9), producer(99, 1, 14)])  # fmt: skip
    third = SegmentSpec([marker(77, 17, kafka.CONTROL_ABORT), plain(18)], [kafka.AbortedTxn(77, 2, 17, 18)],
                        snapshot=[producer(77, 4, 17), producer(88, 1, 9), producer(99, 1, 14)])  # fmt: skip
    return [first, second, third]


def fixture_partition(case: KafkaCase, root: Path, topic_id: str | None = TOPIC_ID) -> Path:
    """A Kafka-written fixture as a partition directory ``<topic>-<partition>``
    (the fixtures have no partition.metadata: one naming ``topic_id`` is
    written, unless it is ``None``)."""
    directory = root / f"{case.spec['topic']}-{case.spec['partition']}"
    shutil.copytree(case.dir, directory)
    if topic_id is not None:
        write_partition_metadata(directory, topic_id)
    return directory


def recompressed(log: bytes, codec: int, compress: Callable[[bytes], bytes]) -> list[bytes]:
    """Every batch of ``log`` with its records compressed by ``compress`` and
    marked with codec id ``codec``, the CRC-32C recomputed: the batches as a
    producer with another codec library would have sent them."""
    out = []
    for batch in kafka.iter_batches(log):
        whole = log[batch.position : batch.position + batch.size_in_bytes]
        payload = compress(kafka.decompress(batch.compression, whole[kafka.BATCH_HEADER_LENGTH :]))
        tail = struct.pack(">h", (batch.attributes & ~0x07) | codec) + whole[23 : kafka.BATCH_HEADER_LENGTH] + payload
        length = kafka.BATCH_HEADER_LENGTH - kafka.LOG_OVERHEAD + len(payload)
        head = struct.pack(">qiibI", batch.base_offset, length, batch.partition_leader_epoch, 2,
                           google_crc32c.value(tail))  # fmt: skip
        out.append(head + tail)
    return out


def restamped(batch: bytes, leader_epoch: int) -> bytes:
    """``batch`` as a leader of ``leader_epoch`` appends it (the partition
    leader epoch, bytes 12-15, is outside the CRC-32C)."""
    return batch[:12] + struct.pack(">i", leader_epoch) + batch[16:]


def overlapping_copies(case: KafkaCase, root: Path, *, cut_batch: int = 6, epoch: int = 1) -> tuple[Path, Path, int]:
    """One partition as two leaders left it after a leader change: the old
    leader's directory holds the fixture's segment (epoch 0), the new
    leader's a segment rolled at batch ``cut_batch`` holding the fixture's
    batches from there, appended in ``epoch``. Returns both directories and
    the offset the new leader's segment starts at."""
    old = fixture_partition(case, root / "old-leader")
    batches = list(kafka.iter_batches(case.log))
    tail = [restamped(case.log[b.position : b.position + b.size_in_bytes], epoch) for b in batches[cut_batch:]]
    start = batches[cut_batch].base_offset
    new = write_partition(root / "new-leader", old.name, [SegmentSpec(tail)], epochs=f"0\n2\n0 0\n{epoch} {start}\n")
    return old, new, start
