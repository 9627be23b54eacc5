"""Ranged, chunk-aligned reads of the plugin's `.log` objects: one GET per
run of chunks, read-ahead through the pool our layout uses, and each chunk
decoded once while kept. GETs are counted by the instrumenting wrapper
around a real filesystem driver."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from offload_core.hooks import Event
from offload_core.instrument import InstrumentedDriver
from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.plugins import open_driver
from offload_core.rsm.aiven import segment_reader
from offload_core.rsm.aiven.storage import AivenRemoteStorage
from offload_core.rsm.types import RemoteLogSegmentMetadata, TopicPartition
from tests.aiven_vectors import aiven_runs, private_keys
from tests.offload.test_read_ahead import settled
from tests.rsm.aiven.stores import put_run

ENCRYPTED = aiven_runs()[2]
LOG = ENCRYPTED.input_bytes("log")


class Store:
    def __init__(self, tmp_path: Path, pool: ReadAheadPool | None = None, buffer_size: int = 4096) -> None:
        self.events: list[Event] = []
        driver = open_driver(f"file://{tmp_path / 'store'}")
        self.key = put_run(driver, ENCRYPTED).with_suffix("log").key
        self.storage = AivenRemoteStorage(InstrumentedDriver(driver, self.events.append), private_keys=private_keys(),
                                          buffer_size=buffer_size, read_ahead=pool)  # fmt: skip
        tp = self.storage.resolve(TopicPartition("oracle-a", 0), None, option="--topic-id")
        (self.segment,) = self.storage.list_remote_segments(tp)
        self.reader = self.storage.reader(self.segment)
        self.events.clear()

    def log_gets(self) -> list[tuple[str, int]]:
        reads = [e for e in self.events if e.kind == "storage.request" and e.fields["op"] == "read"]
        return [(e.fields["key"], e.fields["bytes"]) for e in reads if e.fields["key"] == self.key]


@pytest.fixture
def decodes() -> Iterator[mock.MagicMock]:
    with mock.patch.object(segment_reader, "decode_chunk", wraps=segment_reader.decode_chunk) as counted:
        yield counted


def _chunk_indexes(counted: mock.MagicMock) -> list[int]:
    return [call.kwargs["index"] for call in counted.call_args_list]


def test_a_stream_reads_one_get_per_run_of_chunks_and_no_byte_twice(tmp_path: Path) -> None:
    store = Store(tmp_path)
    with store.storage.fetch_log_segment(store.segment, 0) as stream:
        assert stream.read() == LOG
    chunks = store.reader.chunks
    stored = chunks[-1].stored_end
    gets = store.log_gets()
    assert sum(size for _, size in gets) == stored  # read amplification 1
    runs = -(-stored // 4096)
    assert runs <= len(gets) <= runs + len(chunks) // 2  # runs of about one buffer, whole chunks each


def test_a_stream_from_the_middle_starts_at_the_chunk_holding_it(tmp_path: Path) -> None:
    store = Store(tmp_path, buffer_size=1)
    start = 5 * 1024 + 17
    with store.storage.fetch_log_segment(store.segment, start, start + 10) as stream:
        assert stream.read() == LOG[start : start + 11]
    chunk = store.reader.chunks[5]
    assert store.log_gets() == [(store.key, chunk.stored_end - chunk.stored_start)]


def test_windows_straddling_chunks_decode_each_chunk_once(tmp_path: Path, decodes: mock.MagicMock) -> None:
    store = Store(tmp_path)
    assert store.reader.read_log(1000, 1100) == LOG[1000:1100]
    assert store.reader.read_log(1050, 3100) == LOG[1050:3100]
    assert store.reader.read_log(0, 3072) == LOG[:3072]
    assert _chunk_indexes(decodes) == [0, 1, 2, 3]
    assert len(store.log_gets()) == 2  # chunks 0-1, then 2-3: kept chunks are not fetched again


def test_a_stream_reads_ahead_within_the_pools_budgets(tmp_path: Path, decodes: mock.MagicMock) -> None:
    pool = ReadAheadPool(total_bytes=16 * 1024, reader_bytes=8 * 1024, range_size=2048, workers=2)
    store = Store(tmp_path, pool)
    with store.storage.fetch_log_segment(store.segment, 100) as stream:
        first = stream.read(10)
        assert pool.ranges >= 2  # runs after the reader's are under way
        assert pool.charged_bytes <= 8 * 1024
        assert first + stream.read() == LOG[100:]
    assert settled(pool) == 0 and pool.ranges == 0
    assert pool.peak_bytes <= pool.total_bytes
    assert sorted(_chunk_indexes(decodes)) == list(range(len(store.reader.chunks)))
    assert sum(size for _, size in store.log_gets()) == store.reader.chunks[-1].stored_end
    pool.close()


def test_a_stream_closed_early_gives_back_what_it_read_ahead(tmp_path: Path) -> None:
    pool = ReadAheadPool(total_bytes=16 * 1024, reader_bytes=8 * 1024, range_size=2048, workers=2)
    store = Store(tmp_path, pool)
    segment: RemoteLogSegmentMetadata = store.segment
    with store.storage.fetch_log_segment(segment, 0) as stream:
        assert stream.read(5) == LOG[:5]
    assert settled(pool) == 0 and pool.ranges == 0
    pool.close()
