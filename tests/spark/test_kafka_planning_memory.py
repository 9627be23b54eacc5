"""What planning a ``kafka-remote`` read holds on the Spark driver (issue
42): a partition's listing as counts and sizes, not its keys; its
manifests packed (:mod:`offload_core.rsm.packed_manifest`); and only the
partition being planned, so that a partition holding every segment of a
store costs little more than its plan."""

from __future__ import annotations

import gc
import pickle
import tracemalloc
from collections.abc import Iterator
from dataclasses import replace

import pytest

from offload_core.errors import FormatError
from offload_core.memory import MemoryDriver
from offload_core.plugins import open_driver
from offload_core.rsm.layout import (
    LOG_SUFFIX,
    MANIFEST_SUFFIX,
    SegmentManifest,
    decode_manifest,
    encode_manifest,
    segment_key,
)
from offload_core.rsm.leader_epochs import LeaderEpochStarts
from offload_core.rsm.manifest_bytes import read_manifests
from offload_core.rsm.packed_manifest import pack_manifest
from offload_core.rsm.remote_log import list_partition
from offload_core.rsm.types import (
    RemoteLogIndexEntry,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    TopicIdPartition,
    TopicPartition,
)
from offload_core.spark.kafka_remote import plan_partitions

SEGMENTS = 2_000
OFFSETS = 100  # a segment's


def _segment_id(number: int) -> str:
    return f"seg{number:019d}"


def _manifest(tp: TopicIdPartition, number: int, *, entries: int = 1) -> SegmentManifest:
    base = number * OFFSETS
    segment_id = RemoteLogSegmentId(tp, _segment_id(number))
    meta = RemoteLogSegmentMetadata(segment_id, start_offset=base, end_offset=base + OFFSETS - 1,
                                    max_timestamp_ms=1_700_000_000_000 + base, broker_id=0,
                                    event_timestamp_ms=1_700_000_000_000 + number, segment_size_in_bytes=2000,
                                    segment_leader_epochs={0: base},
                                    state=RemoteLogSegmentState.COPY_SEGMENT_FINISHED)  # fmt: skip
    step = OFFSETS // entries
    index = tuple(RemoteLogIndexEntry(segment_id, base, base + n * step, base + (n + 1) * step - 1, -1, 1_700_000 + n,
                                      n * 2000 // entries, 2000 // entries) for n in range(entries))  # fmt: skip
    return SegmentManifest(meta, {LOG_SUFFIX: 2000, "index": 8 * entries}, index)


@pytest.fixture(scope="module")
def one_partition_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One partition holding every segment (the manifests only: planning reads nothing else)."""
    url = f"file://{tmp_path_factory.mktemp('kafka') / 'store'}"
    driver = open_driver(url, fsync="false")
    tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 0))
    for number in range(SEGMENTS):
        manifest = _manifest(tp, number)
        key = segment_key("", manifest.metadata.segment_id, manifest.metadata.start_offset, MANIFEST_SUFFIX)
        driver.write(key, [encode_manifest(manifest)])
    return url


def test_planning_a_partition_of_every_segment_holds_little_more_than_its_plan(one_partition_store: str) -> None:
    options = {"url": one_partition_store, "subscribe": "orders", "driver.fsync": "false"}
    plan_partitions(options)  # imports and first-use caches out of the measure
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        planned = plan_partitions(options)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(len(p.ranges) for p in planned) == SEGMENTS
    pickled = sum(len(pickle.dumps(p)) for p in planned) / SEGMENTS
    # Some 1,300 bytes a segment more than the plan's pickled 70: its metadata (with its leader epochs as a
    # tuple), its packed manifest and served range, and the transforms' cache of keys (bounded, 4,096 keys);
    # its manifest as objects, its listed keys and the reader before it held at once were over 2,100.
    assert (peak - before) / SEGMENTS < pickled + 1_500


def test_a_packed_manifest_unpacks_to_the_one_packed() -> None:
    tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 3))
    manifest = _manifest(tp, 7, entries=5)
    odd = SegmentManifest(manifest.metadata, {"log": 2**63 - 1, "txnindex": 0, "naïve": 3}, ())
    for original in (manifest, odd):
        packed = pack_manifest(original, key="k")
        assert packed.unpacked() == original
        assert packed.metadata is original.metadata
        assert dict(packed.object_sizes) == dict(original.object_sizes)
        assert packed.index_entries == original.index_entries
    assert [e.first_timestamp for e in pack_manifest(manifest, key="k").index_entries] == [-1] * 5


def test_a_manifest_past_kafkas_longs_is_refused_naming_its_key() -> None:
    tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 3))
    manifest = _manifest(tp, 1)
    huge = SegmentManifest(manifest.metadata, {"log": 2**63}, manifest.index_entries)
    with pytest.raises(FormatError, match="p/m.rsm-manifest is not a segment manifest"):
        pack_manifest(huge, key="p/m.rsm-manifest")


def test_listing_gives_the_attempts_counts_and_bytes_without_keeping_keys() -> None:
    driver = MemoryDriver()
    tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 0))
    committed = [_manifest(tp, number) for number in (0, 2)]
    for manifest in committed:
        meta = manifest.metadata
        driver.write(segment_key("", meta.segment_id, meta.start_offset, LOG_SUFFIX), [b"x" * 7])
        driver.write(segment_key("", meta.segment_id, meta.start_offset, MANIFEST_SUFFIX), [encode_manifest(manifest)])
    half = RemoteLogSegmentId(tp, _segment_id(1))
    driver.write(segment_key("", half, OFFSETS, LOG_SUFFIX), [b"x" * 5])
    driver.write(segment_key("", half, OFFSETS, "index"), [b"y" * 3])
    driver.write("orders-0-5fEBmixCR5-dMntYSLIr1g/not-ours.txt", [b"z"])
    listing = list_partition(driver, "", tp)
    assert [m.unpacked() for m in listing.segments] == committed
    assert listing.uncommitted == [(OFFSETS, _segment_id(1), 2, 8)]
    assert listing.legacy_empty == []


def test_manifests_are_read_from_a_generator_only_as_far_as_the_reads_ahead() -> None:
    driver = MemoryDriver()
    for number in range(100):
        driver.write(f"p/{number:03d}", [b"m" * number])
    made: list[str] = []

    def listed() -> Iterator[tuple[str, int]]:
        for number in range(100):
            made.append(f"p/{number:03d}")
            yield made[-1], number

    stored = read_manifests(driver, listed())
    assert next(stored) == b""
    assert len(made) < 100  # the keys are made as they are read, not all at once
    assert list(stored) == [b"m" * number for number in range(1, 100)]
    assert len(made) == 100


def test_leader_epochs_decoded_from_a_manifest_read_as_the_dict_they_were_written_from() -> None:
    tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 0))
    written = _manifest(tp, 3)
    epochs = {2: 300, 4: 310, 7: 350}
    meta = replace(written.metadata, segment_leader_epochs=epochs)
    decoded = decode_manifest(encode_manifest(SegmentManifest(meta, written.object_sizes, written.index_entries)))
    starts = decoded.metadata.segment_leader_epochs
    assert isinstance(starts, LeaderEpochStarts)
    assert starts == epochs and [epochs] == [starts] and starts != {2: 300}  # a dict on either side
    assert decoded.metadata == meta
    assert list(starts.items()) == [(2, 300), (4, 310), (7, 350)] and len(starts) == 3 and max(starts) == 7
    assert (starts[4], starts.get(5), 7 in starts, 5 in starts) == (310, None, True, False)
    assert (4, 310) in starts.items() and (4, 300) not in starts.items() and starts.items() == epochs.items()
    assert decoded.metadata.epoch_end_offset(2) == 309 and decoded.metadata.epoch_end_offset(7) == 399
    with pytest.raises(KeyError):
        starts[5]
    assert pickle.loads(pickle.dumps(starts)) == starts and repr(starts) == "{2: 300, 4: 310, 7: 350}"


def test_a_listing_names_its_partition_once() -> None:
    driver = MemoryDriver()
    tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 0))
    for number in range(3):
        meta = _manifest(tp, number).metadata
        key = segment_key("", meta.segment_id, meta.start_offset, MANIFEST_SUFFIX)
        driver.write(key, [encode_manifest(_manifest(tp, number))])
    asked = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 0))
    listing = list_partition(driver, "", asked)
    assert [m.metadata.topic_id_partition is asked for m in listing.segments] == [True] * 3


def test_a_listed_manifest_a_fetch_asks_for_is_unpacked_once() -> None:
    from offload_core.rsm import RemoteStorageManager

    driver = MemoryDriver()
    tp = TopicIdPartition("5fEBmixCR5-dMntYSLIr1g", TopicPartition("orders", 0))
    for number in range(3):
        manifest = _manifest(tp, number, entries=4)
        key = segment_key("", manifest.metadata.segment_id, manifest.metadata.start_offset, MANIFEST_SUFFIX)
        driver.write(key, [encode_manifest(manifest)])
    rsm = RemoteStorageManager(driver)
    served = rsm.served_ranges(tp)  # the listing: its manifests held packed
    metadata = served[1].segment
    first = rsm.manifest(metadata)
    assert first == _manifest(tp, 1, entries=4)
    assert rsm.manifest(metadata) is first  # the same object: not unpacked again for every fetch
