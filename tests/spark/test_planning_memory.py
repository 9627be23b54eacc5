"""What planning a read holds on the Spark driver (issue 42 item 5): the
listing as keys and sizes, a complete ledger copy as its data key, and one
Kafka partition's manifests at a time, so that planning a store of many
objects holds little more than their keys and the partitions it returns,
and the partitions leave the store's URL and options to the reader."""

from __future__ import annotations

import gc
import pickle
import sys
import tracemalloc
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.formats import pulsar_v1 as v1
from offload_core.memory import MemoryDriver
from offload_core.model import Entry, ObjectInfo
from offload_core.offload.ledgers.inventory import group_ledgers, sorted_copies, stream_complete_ledgers
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark import kafka_remote, plan_partitions
from offload_core.spark.planning_reads import ListedOnce
from offload_core.spark.pulsar_offload import make_reader
from tests.rsm.segments import numbered_segments, write_partition
from tests.spark.planned_blocks import planned_ledger_ids
from tests.spark.test_jobs_over_mapfiles import write_mapfile
from tests.spark.test_pulsar_offload_segments import stream

OBJECTS = 2_000


def test_listed_once_serves_the_listing_it_holds_as_keys_and_sizes() -> None:
    store = MemoryDriver()
    for number in range(OBJECTS):
        store.write(f"ledgers/{number:05d}", [b"x" * (number % 7)])
    listed = ListedOnce(store)
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        assert sum(1 for _ in listed.list("")) == OBJECTS  # the first listing is kept
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # Each key, a reference to it and its size (8 bytes each): a kept record (its own object, a
    # metadata mapping and the mapping's proxy) was over 200 bytes more.
    keys = sum(sys.getsizeof(info.key) for info in store.list("")) / OBJECTS
    assert (held - before) / OBJECTS < keys + 32
    for prefix in ("", "ledgers/000", "ledgers/01999", "ledgers/1", "other"):
        assert list(listed.list(prefix)) == list(store.list(prefix))


def test_keys_the_first_listing_takes_are_passed_on_and_never_kept() -> None:
    store = MemoryDriver()
    for number in range(50):
        store.write(f"{'ledger' if number % 2 else 'other'}/{number:03d}", [b"x" * number])
    listed = ListedOnce(store, taken_by_first=lambda key: key.startswith("ledger/"))
    partway = listed.list("")
    assert next(partway).key == "ledger/001"  # passed on as it comes
    del partway  # left part way: nothing is kept, and the next listing is the store's again
    everything = list(listed.list(""))
    assert everything == list(store.list(""))
    assert list(listed.list("")) == list(store.list("other/"))  # from then on, without the taken keys
    assert list(listed.list("ledger/")) == [] and list(listed.list("other/01")) == list(store.list("other/01"))


def _listing(pairs: list[tuple[str, str, int, bool, bool]]) -> list[ObjectInfo]:
    keys = []
    for prefix, uid, ledger_id, data, index in pairs:
        if data:
            keys.append(prefix + v1.data_key(uid, ledger_id))
        if index:
            keys.append(prefix + v1.index_key(uid, ledger_id))
    return [ObjectInfo(key, 1) for key in sorted([*keys, "unrelated", "x/ledger-3"])]


def test_complete_ledgers_are_the_complete_groups_in_their_order() -> None:
    uids = sorted(str(uuid.UUID(int=n + 1)) for n in range(4))
    listing = _listing([
        ("", uids[0], 3, True, True),
        ("a/", uids[1], 3, True, True),  # a second copy of ledger 3 under a prefix
        ("", uids[2], 1, True, False),  # data without its index: an offload that never finished
        ("", uids[3], 1, False, True),
        ("", uids[1], 2, True, True),
        ("b/", uids[0], 10, True, True),
    ])  # fmt: skip
    found = sorted_copies(stream_complete_ledgers(iter(listing)))  # one pass over the listing, as it comes
    expected = [ledger for ledger in group_ledgers(listing) if ledger.complete]
    assert [(c.prefix, c.uuid, c.ledger_id, c.data_key, c.index_key) for c in found] == [
        (e.prefix, e.uuid, e.ledger_id, e.data_key, e.index_key) for e in expected
    ]
    assert [c.ledger_id for c in found] == [2, 3, 3, 10]


def test_kafka_planning_lets_each_partitions_reader_go_before_the_next_but_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"file://{tmp_path / 'store'}"
    rsm = RemoteStorageManager(open_driver(url))
    for partition in range(4):
        tp, segments = read_partition_dir(write_partition(tmp_path, f"orders-{partition}", numbered_segments(4)))
        for segment in segments:
            rsm.copy_log_segment(tp, segment.data)
    selected = kafka_remote.selected_logs
    alive: list[weakref.ref[Any]] = []
    held_when_yielded: list[int] = []

    def watched(parsed: Any, driver: Any, manifests: Any = None) -> Iterator[Any]:
        for reader in selected(parsed, driver, manifests):
            gc.collect()
            held_when_yielded.append(sum(1 for ref in alive if ref() is not None))
            alive.append(weakref.ref(reader))
            yield reader
            del reader

    monkeypatch.setattr(kafka_remote, "selected_logs", watched)
    planned = kafka_remote.plan_partitions({"url": url, "subscribe": "orders"})
    assert [(p.partition, len(p.ranges)) for p in planned] == [(n, len(segments)) for n in range(4)]
    # None: the reader planned is let go before the next partition is listed.
    assert held_when_yielded == [0, 0, 0, 0]


def test_partitions_carry_neither_the_store_url_nor_the_driver_options(tmp_path: Path) -> None:
    """Spark pickles every partition on its own (the JVM holds the bytes
    until the tasks run): what every partition would repeat, the reader
    holds once."""
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=4096)
    for ledger_id in range(3):
        offloader.offload(InMemoryReadHandle(ledger_id, [b"entry"] * 5), uuid.uuid4())
    stream(url, [Entry(7, entry_id, b"x" * 50) for entry_id in range(5)])
    write_mapfile(url, 9)
    rsm = RemoteStorageManager(open_driver(url))
    tp, segments = read_partition_dir(write_partition(tmp_path, "orders-0", numbered_segments(2)))
    for segment in segments:
        rsm.copy_log_segment(tp, segment.data)
    options = {"driver.fsync": "false"}
    pulsar = plan_partitions({"path": url, **options})
    kafka = kafka_remote.plan_partitions({"url": url, "subscribe": "orders", **options})
    assert sorted(planned_ledger_ids(pulsar)) == [0, 1, 2, 7, 9]
    assert [len(p.ranges) for p in kafka] == [len(segments)]
    for partition in [*pulsar, *kafka]:
        pickled = pickle.dumps(partition)
        assert url.encode() not in pickled and b"fsync" not in pickled and b"transforms" not in pickled
    # The reader holds them, and reads every partition of the plan with them.
    reader = make_reader({"path": url, "arrow": "false", "decode": "none", **options})
    assert (reader.store.url, dict(reader.store.options)) == (url, {"fsync": "false", "transforms": "auto"})
    assert sum(1 for p in pulsar for _ in reader.read(p)) == 3 * 5 + 5 + 300


def test_planning_keeps_no_key_of_pulsars_objects_once_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from offload_core.formats import pulsar_v2 as v2
    from offload_core.spark import pulsar_offload

    url = f"file://{tmp_path / 'bucket'}"
    open_offloader(url, max_block_size=4096).offload(InMemoryReadHandle(1, [b"entry"] * 5), uuid.uuid4())
    stream(url, [Entry(7, entry_id, b"x" * 50) for entry_id in range(5)])
    write_mapfile(url, 9)
    made: list[ListedOnce] = []

    class Watched(ListedOnce):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(pulsar_offload, "ListedOnce", Watched)
    assert sorted(planned_ledger_ids(plan_partitions({"path": url}))) == [1, 7, 9]
    (listed,) = made
    kept = list(listed.list(""))
    # What the other kinds find their offloads in (the MapFile's directory), not Pulsar's objects.
    assert kept and all(v1.parse_key(info.key) is None and v2.parse_segment_key(info.key) is None for info in kept)
    assert any("/9-" in info.key for info in kept)


def test_planning_reads_keep_nothing_of_an_object_once_read(tmp_path: Path) -> None:
    """Planning reads each index once, a few threads at a time, each with
    its own driver. Each driver kept what it learned of every object read
    (its layout, to read it again without a stat: the key and a cache
    entry, some 150 bytes, up to 4096 objects a thread), so most of the
    keys read were held until the last read: measured here, the peak grew
    by some 80 bytes an object read (10 to 15 now)."""
    from offload_core.spark.planning_reads import read_objects
    from offload_core.spark.read_options import parse_read_options

    url = f"file://{tmp_path / 'objects'}"
    driver = open_driver(url, fsync="false")
    keys = [f"objects/{uuid.uuid4()}-index" for _ in range(OBJECTS)]
    for key in keys:
        driver.write(key, [b"x" * 10])
    driver.close()
    options = parse_read_options({"path": url, "driver.fsync": "false"})

    def peak_reading(some: list[str]) -> int:
        gc.collect()
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            assert sum(read_objects(options, iter(some), len)) == 10 * len(some)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return peak - before

    few = OBJECTS // 4  # what the threads and drivers cost whatever is read, counted out
    assert (peak_reading(keys) - peak_reading(keys[:few])) / (OBJECTS - few) < 40


def _segments_store(tmp_path: Path, count: int, per_ledger: int = 10, directories: int = 1) -> str:
    """``count`` one-block segments, ledger ``n // per_ledger`` streamed
    across ``per_ledger`` of them in order, spread over ``directories``
    key prefixes (a filesystem listing sorts a directory's names in memory)."""
    from offload_core.formats import pulsar_v2 as v2

    url = f"file://{tmp_path / 'segments'}"
    driver = open_driver(url, fsync="false")
    for number in range(count):
        ledger_id, first = number // per_ledger, (number % per_ledger) * 4
        (block,) = v2.encode_segment_blocks(iter([(ledger_id, first + n, b"x" * 10) for n in range(4)]),
                                            streaming_block_size=4096)  # fmt: skip
        info = v2.ledger_info_bytes(ledger_id, last_entry_id=first + 3, closed=False)
        index = v2.index_for_blocks([(ledger_id, block.row)], data_object_length=len(block.data),
                                    ledger_infos={ledger_id: info})  # fmt: skip
        name = f"d{number % directories}/{uuid.uuid4()}" if directories > 1 else str(uuid.uuid4())
        driver.write(v2.segment_data_key(name), [bytes(block.data)])
        driver.write(v2.segment_index_key(name), [v2.encode_index(index)])
    driver.close()
    return url


@pytest.mark.parametrize(("per_ledger", "bound"), [(10, 200), (1, 250)])
def test_planning_segments_holds_little_more_than_their_runs(tmp_path: Path, per_ledger: int, bound: int) -> None:
    """Planning a store of segments: the peak counted per segment as it
    grows with the segments planned (what the threads and the listing cost
    whatever is planned counted out). Measured here: 330 bytes a segment
    (10 segments a ledger), 480 (a segment a ledger) while the drivers
    kept every index's layout, each segment's key was held twice to the
    end (the planning's list and the plan), a dict entry and an int64
    array a ledger were held to the last and the plan's integers were
    int64s; 130 and 155 since."""
    count = 1_200
    url = _segments_store(tmp_path, count, per_ledger, directories=20)

    def planning(share: int) -> tuple[int, int]:
        gc.collect()
        tracemalloc.start()
        try:
            before, _ = tracemalloc.get_traced_memory()
            planned = plan_partitions({"path": url, "driver.fsync": "false"},
                                      segment_wanted=lambda key: int(key[-36:-28], 16) % 4 < share)  # fmt: skip
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return peak - before, sum(1 for partition in planned for _ in partition.runs())

    (peak, planned), (few_peak, few) = planning(4), planning(1)
    assert planned == count and 0 < few < count / 2
    assert (peak - few_peak) / (planned - few) < bound


def test_segment_planning_holds_a_few_int64s_a_segment_until_its_last_index_is_read(tmp_path: Path) -> None:
    """Every segment's runs are held until the last index is read (a later
    segment may start a ledger earlier). As Python tuples and lists each
    run was some 400 bytes, and the planned runs were all held again as
    a list before the first was packed: the plan's peak was 680 bytes a
    segment at 20,000 (bench_planning). Measured here on that code: 670
    bytes a segment (the read-ahead and the drivers' caches count in
    both); held as int64s and given a ledger at a time, 450; with the
    reading drivers keeping no layout of an index read, 290."""
    from offload_core.spark.read_options import parse_read_options
    from offload_core.spark.segment_planning import plan_segment_blocks

    count = 1_000
    url = _segments_store(tmp_path, count)
    options = parse_read_options({"path": url, "driver.fsync": "false"})
    data_keys = sorted(info.key for info in open_driver(url).list("") if not info.key.endswith("-index"))
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        planned = [
            (run.ledger_id, run.blocks[0][2]) for run in plan_segment_blocks(options, data_keys, skip_ledgers=())
        ]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert planned == [(n // 10, (n % 10) * 4) for n in range(count)]  # in ledger order, each ledger's in entry order
    assert (peak - before) / count < 350


def test_segment_planning_lets_the_data_keys_go_once_the_indexes_are_read(tmp_path: Path) -> None:
    """The runs hold their segments' keys (packed), so the keys the caller
    collected are freed before the first run is given (they were held to
    the last, with the plan); each run still names its segment exactly,
    whatever its prefix, and a second copy of a segment counts once (the
    first by uuid)."""
    from offload_core.formats import pulsar_v2 as v2
    from offload_core.spark.key_lists import KeyList
    from offload_core.spark.read_options import parse_read_options
    from offload_core.spark.segment_planning import plan_segment_blocks

    url = _segments_store(tmp_path, 24, per_ledger=4, directories=3)
    driver = open_driver(url, fsync="false")
    data_keys = [info.key for info in driver.list("") if not info.key.endswith("-index")]
    copy = f"{data_keys[5][:-36]}{uuid.uuid4()}"
    for suffix in ("", "-index"):
        driver.write(copy + suffix, [driver.read(data_keys[5] + suffix)])
    starts = {}
    for key in [*data_keys, copy]:
        (section,) = v2.decode_index(driver.read(key + "-index")).ledgers
        starts[key] = (section.ledger_id, section.first_entry_id, key[-36:])
    driver.close()
    ordered = sorted(starts, key=starts.__getitem__)
    expected = [(*starts[key][:2], key) for number, key in enumerate(ordered)
                if not number or starts[ordered[number - 1]][:2] != starts[key][:2]]  # fmt: skip
    assert len(expected) == 24 and {key.split("/")[0] for _, _, key in expected} == {"d0", "d1", "d2"}
    keys = KeyList()
    for key in sorted([*data_keys, copy]):
        keys.append(key)
    let_go = weakref.ref(keys)
    options = parse_read_options({"path": url, "driver.fsync": "false"})
    runs = plan_segment_blocks(options, keys, skip_ledgers=())
    del keys
    first = next(runs)
    assert let_go() is None
    assert [(run.ledger_id, run.blocks[0][2], run.data_key) for run in [first, *runs]] == expected


def test_key_lists_hold_a_segments_data_key_in_about_its_uuids_bytes() -> None:
    """The segment keys planning collects as the listing passes are held
    to the end of the segments' planning: as UTF-8 they were 36 bytes and
    an 8-byte end each (46 bytes a key measured here)."""
    from offload_core.spark.key_lists import KeyList

    keys = [str(uuid.uuid4()) for _ in range(OBJECTS)]
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        held = KeyList()
        for key in keys:
            held.append(key)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert list(held) == keys
    assert (after - before) / OBJECTS < 30


def test_key_lists_give_back_the_keys_appended_as_a_list_would() -> None:
    from offload_core.spark.key_lists import KeyList

    uid = "0f0e0d0c-0b0a-4908-8706-050403020100"
    keys = ["a", "", "tenant/ns/ünïcode-ledger-7", "b" * 300, uid, f"p/ü/{uid}", f"{uid}-ledger-7", f"{uid}-ledger-07",
            f"{uid}-index", uid.upper(), "\xff"]  # fmt: skip
    held = KeyList()
    for key in keys:
        held.append(key)
    assert list(held) == keys and len(held) == len(keys)
    assert [held[n] for n in range(-len(keys), len(keys))] == keys + keys
    assert held[1:3] == keys[1:3] and held[::-1] == keys[::-1]
    with pytest.raises(IndexError):
        held[len(keys)]
