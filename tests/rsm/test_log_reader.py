"""Reading remote Kafka logs as a consumer: by offset across segments, by
timestamp with Kafka's answers, read_committed, and the request cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.errors import FormatError, InvalidRangeError
from offload_core.formats import kafka
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.rsm.log_reader import Isolation, RemoteLogReader
from tests.kafka_vectors import kafka_cases
from tests.legacy_message_sets import upgraded_topic
from tests.rsm.segments import (
    TOPIC_ID,
    SegmentSpec,
    fixture_partition,
    numbered_segments,
    transactional_segment,
    undecided_transaction_segments,
    write_partition,
)


def copied(tmp_path: Path, directory: Path, **options: int) -> tuple[RemoteStorageManager, RemoteLogReader]:
    rsm = RemoteStorageManager(open_driver(f"file://{tmp_path / 'store'}"), **options)  # type: ignore[arg-type]
    tp, segments = read_partition_dir(directory)
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    return rsm, RemoteLogReader(rsm, tp)


def test_records_from_any_offset_across_segments(tmp_path) -> None:
    rsm, reader = copied(tmp_path, write_partition(tmp_path, "orders-0", numbered_segments(3)))
    assert [r.record.offset for r in reader.records(0)] == list(range(300))
    assert [r.record.offset for r in reader.records(97)][:5] == [97, 98, 99, 100, 101]
    assert [r.record.offset for r in reader.records(150, end_offset=160)] == list(range(150, 161))
    assert list(reader.records(300)) == []  # the end: nothing yet
    with pytest.raises(InvalidRangeError, match="offset 301 is past the end of the remote log of orders-0"):
        list(reader.records(301))
    batches = list(reader.batches(0, max_bytes=1))
    assert len(batches) == 1  # at least one whole batch


def test_reading_costs_at_most_two_gets_once_the_offset_index_is_cached(tmp_path) -> None:
    rsm, reader = copied(tmp_path, write_partition(tmp_path, "orders-0", numbered_segments(1, batches=200)),
                         buffer_size=64 * 1024)  # fmt: skip
    (segment,) = reader.segments
    rsm.offset_index(segment)
    rsm.manifest(segment)
    for offset in (0, 333, 512, 999):
        before = rsm.driver.request_counts["read"]
        records = list(reader.records(offset, max_bytes=1))
        assert records[0].record.offset == offset
        assert rsm.driver.request_counts["read"] - before <= 2


@pytest.mark.parametrize("case", kafka_cases(), ids=lambda c: c.name)
def test_timestamp_lookups_are_kafkas(tmp_path, case) -> None:
    _, reader = copied(tmp_path, fixture_partition(case, tmp_path))
    for lookup in case.spec["timestamp_lookups"]:
        found = reader.offset_for_timestamp(lookup["target_timestamp"])
        expected = lookup["found"]
        assert (None if found is None else {"timestamp": found.timestamp, "offset": found.offset,
                                            "leader_epoch": found.leader_epoch}) == expected  # fmt: skip


def test_read_committed_drops_aborted_transactions_and_control_records(tmp_path) -> None:
    _, reader = copied(tmp_path, write_partition(tmp_path, "txn-0", [transactional_segment()]))
    assert [r.record.offset for r in reader.records(0)] == [0, 1, 2, 4, 5, 7, 8]
    assert [r.record.offset for r in reader.records(0, isolation=Isolation.READ_COMMITTED)] == [0, 1, 2, 7, 8]


def test_damaged_remote_batch_is_a_format_error(tmp_path) -> None:
    rsm, reader = copied(tmp_path, write_partition(tmp_path, "orders-0", numbered_segments(1)))
    (segment,) = reader.segments
    key = f"orders-0-{TOPIC_ID}/{segment.start_offset:020d}-{segment.segment_id.id}.log"
    data = bytearray(rsm.driver.read(key))
    data[5000] ^= 1
    rsm.driver.write(key, [bytes(data)], metadata={})
    with pytest.raises(FormatError, match="CRC"):
        list(reader.records(0))


def test_magic_0_and_1_segments_read_from_any_offset(tmp_path) -> None:
    segments, expected = upgraded_topic()
    rsm, reader = copied(tmp_path, write_partition(tmp_path, "old-0", [SegmentSpec(s) for s in segments]))
    want = [(o, t, k, v) for o, t, k, v, _ in expected]
    for start in (0, 3, 7, 14, 16, 21, 25, 30):
        got = [(r.record.offset, r.record.timestamp, r.record.key, r.record.value) for r in reader.records(start)]
        assert got == want[start:]
    assert [r.record.offset for r in reader.records(6, end_offset=17)] == list(range(6, 18))
    # The seed interface: one ranged GET per index entry, whole wrappers from the one holding the offset.
    entry = rsm.get_remote_log_index_entries(reader.segments[1])[0]
    first = kafka.decode_batch_header(rsm.read(entry, 1, 17, True))
    assert (first.magic, first.base_offset, first.last_offset) == (1, 15, 19)


def test_read_committed_stops_at_a_transaction_whose_marker_is_not_tiered(tmp_path) -> None:
    directory = write_partition(tmp_path, "txn-0", undecided_transaction_segments())
    tp, (rolled, active) = read_partition_dir(directory)
    rsm = RemoteStorageManager(open_driver(f"file://{tmp_path / 'store'}"))
    rsm.copy_log_segment(tp, rolled.data)
    reader = RemoteLogReader(rsm, tp)
    assert [r.record.offset for r in reader.records(0)] == [0, 1, 2, 3, 4, 5, 6]
    # Producer 77's transaction from offset 2 is undecided in the remote log: the last stable offset.
    assert reader.last_stable_offset == 2 and reader.undecided_transaction.producer_id == 77
    assert [r.record.offset for r in reader.records(0, isolation=Isolation.READ_COMMITTED)] == [0, 1]
    assert list(reader.records(5, isolation=Isolation.READ_COMMITTED)) == []
    # Once its ABORT marker is tiered (in the next segment, whose .txnindex lists it), it is aborted.
    rsm.copy_log_segment(tp, active.data)
    reader = RemoteLogReader(rsm, tp)
    assert reader.last_stable_offset is None
    assert [r.record.offset for r in reader.records(0, isolation=Isolation.READ_COMMITTED)] == [0, 1, 5, 6, 8, 9]
    assert [r.record.offset for r in reader.records(3, isolation=Isolation.READ_COMMITTED)] == [5, 6, 8, 9]


def tampered(tmp_path: Path, change) -> tuple[RemoteLogReader, str, list[kafka.IndexEntry]]:  # type: ignore[no-untyped-def]
    """A copied segment whose remote .index ``change`` rewrote (entries in,
    bytes out), read by a fresh reader (nothing cached)."""
    rsm, reader = copied(tmp_path, write_partition(tmp_path, "orders-0", numbered_segments(1, batches=60)))
    (segment,) = reader.segments
    key = f"orders-0-{TOPIC_ID}/{segment.start_offset:020d}-{segment.segment_id.id}.index"
    entries = kafka.decode_offset_index(rsm.driver.read(key), 0)
    rsm.driver.write(key, [change(entries, rsm.fetch_log_segment(segment, 0).read())], metadata={})
    return RemoteLogReader(RemoteStorageManager(rsm.driver), reader.topic_id_partition), key, entries


def test_a_cut_remote_index_is_refused_by_size(tmp_path) -> None:
    reader, key, entries = tampered(tmp_path, lambda e, _: kafka.encode_offset_index(e[:-1], 0))
    with pytest.raises(FormatError, match=f"{key} holds .* bytes but its segment's manifest recorded"):
        list(reader.records(entries[-1].offset))


def test_an_entry_moved_to_a_later_batch_is_refused_not_skipped(tmp_path) -> None:
    def later(entries: list[kafka.IndexEntry], log: bytes) -> bytes:
        # Entry 3 moved to the next batch boundary: still increasing, still a batch start.
        batch = kafka.decode_batch_header(log, entries[3].position)
        entries[3] = kafka.IndexEntry(entries[3].offset, entries[3].position + batch.size_in_bytes)
        return kafka.encode_offset_index(entries, 0)

    reader, key, entries = tampered(tmp_path, later)
    with pytest.raises(FormatError, match=f"remote offset index {key}: entry .* past the offset it names"):
        list(reader.records(entries[3].offset))
    assert [r.record.offset for r in reader.records(entries[2].offset, end_offset=entries[3].offset - 1)][0] == (
        entries[2].offset
    )


def test_an_entry_off_a_batch_boundary_or_past_the_log_is_refused(tmp_path) -> None:
    def inside(entries: list[kafka.IndexEntry], _: bytes) -> bytes:
        entries[3] = kafka.IndexEntry(entries[3].offset, entries[3].position + 7)
        return kafka.encode_offset_index(entries, 0)

    reader, key, entries = tampered(tmp_path, inside)
    with pytest.raises(FormatError, match=f"remote offset index {key}: .* does not point at the start of a batch"):
        list(reader.records(entries[3].offset))

    def past(entries: list[kafka.IndexEntry], log: bytes) -> bytes:
        entries[-1] = kafka.IndexEntry(entries[-1].offset, len(log) + 100)
        return kafka.encode_offset_index(entries, 0)

    reader, key, entries = tampered(tmp_path / "past", past)
    with pytest.raises(FormatError, match=f"remote offset index {key}: .* lies outside its segment"):
        list(reader.records(entries[-1].offset))
