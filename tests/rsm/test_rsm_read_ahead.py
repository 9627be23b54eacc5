"""Read-ahead on remote Kafka segments: several ranges in flight within the
reader's allowance and the process budget, every byte once and in order,
released on close (also mid-read), and two readers share one download."""

from __future__ import annotations

from pathlib import Path

from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteLogSegmentMetadata, RemoteStorageManager, read_partition_dir
from tests.offload.test_read_ahead import settled
from tests.rsm.segments import TOPIC_ID, numbered_segments, write_partition

RANGE = 8 * 1024


def copied(tmp_path: Path, pool: ReadAheadPool) -> tuple[RemoteStorageManager, RemoteLogSegmentMetadata, bytes]:
    driver = open_driver(f"file://{tmp_path / 'store'}")
    rsm = RemoteStorageManager(driver, buffer_size=4096, read_ahead=pool)
    tp, (segment,) = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(1, batches=60)))
    rsm.copy_log_segment(tp, segment.data)
    (remote,) = rsm.list_remote_segments(tp)
    return rsm, remote, segment.data.log_segment.read_bytes()


def test_read_ahead_stays_within_budgets_and_serves_every_byte_in_order(tmp_path) -> None:
    pool = ReadAheadPool(total_bytes=4 * RANGE, reader_bytes=3 * RANGE, range_size=RANGE, workers=2)
    rsm, remote, log = copied(tmp_path, pool)
    with rsm.fetch_log_segment(remote, 100) as stream:
        first = stream.read(10)
        assert first == log[100:110]
        assert pool.ranges >= 2  # ranges ahead of the reader are under way
        assert pool.charged_bytes <= 3 * RANGE
        assert first + stream.read() == log[100:]
    assert pool.peak_bytes <= pool.total_bytes
    assert pool.charged_bytes == 0 and pool.ranges == 0
    pool.close()


def test_close_mid_read_cancels_and_frees_the_budget(tmp_path) -> None:
    pool = ReadAheadPool(total_bytes=4 * RANGE, reader_bytes=3 * RANGE, range_size=RANGE, workers=2)
    rsm, remote, log = copied(tmp_path, pool)
    stream = rsm.fetch_log_segment(remote, 0)
    assert stream.read(5000) == log[:5000]
    assert pool.charged_bytes > 0
    stream.close()
    # Downloads already running end on their own; their bytes are freed then.
    assert settled(pool) == 0 and pool.ranges == 0
    pool.close()


def test_two_readers_of_one_segment_share_downloads(tmp_path) -> None:
    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=64 * RANGE, range_size=RANGE, workers=2)
    rsm, remote, log = copied(tmp_path, pool)
    start = 3 * RANGE  # aligned, so both readers ask for the same ranges
    with rsm.fetch_log_segment(remote, start) as one, rsm.fetch_log_segment(remote, start) as two:
        assert one.read() == log[start:] == two.read()
    ranges = -(-(len(log) - start) // RANGE)
    assert pool.fetches <= ranges + 1
    pool.close()


def test_a_reader_starts_the_next_segments_download_before_it_finishes_this_one(tmp_path) -> None:
    from offload_core.rsm.log_reader import RemoteLogReader

    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=4 * RANGE, range_size=RANGE, workers=2)
    driver = open_driver(f"file://{tmp_path / 'store'}")
    rsm = RemoteStorageManager(driver, buffer_size=4096, read_ahead=pool)
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(3, batches=20)))
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    reader = RemoteLogReader(rsm, tp)
    second = reader.segments[1]
    second_key = f"orders-0-{TOPIC_ID}/{second.start_offset:020d}-{second.segment_id.id}.log"
    seen_ahead = False
    offsets = []
    for remote in reader.records(0):
        offsets.append(remote.record.offset)
        if remote.record.offset == second.start_offset - 1:
            # The last record of the first segment: the second is already under way.
            seen_ahead = any(shared.key == second_key for shared in pool._ranges.values())
    assert offsets == list(range(300)) and seen_ahead
    assert settled(pool) == 0  # everything released at the end


def test_stopping_early_releases_what_was_read_ahead_for_the_next_segment(tmp_path) -> None:
    from offload_core.rsm.log_reader import RemoteLogReader

    pool = ReadAheadPool(total_bytes=64 * RANGE, reader_bytes=4 * RANGE, range_size=RANGE, workers=2)
    driver = open_driver(f"file://{tmp_path / 'store'}")
    rsm = RemoteStorageManager(driver, buffer_size=4096, read_ahead=pool)
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(2, batches=20)))
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    records = RemoteLogReader(rsm, tp).records(95)
    assert next(records).record.offset == 95
    records.close()
    assert settled(pool) == 0 and pool.ranges == 0
