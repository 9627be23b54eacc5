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


def _segments_store(tmp_path: Path, count: int) -> str:
    """``count`` one-block segments, ledger ``n // 10`` streamed across ten of them in order."""
    from offload_core.formats import pulsar_v2 as v2

    url = f"file://{tmp_path / 'segments'}"
    driver = open_driver(url, fsync="false")
    for number in range(count):
        ledger_id, first = number // 10, (number % 10) * 4
        (block,) = v2.encode_segment_blocks(iter([(ledger_id, first + n, b"x" * 10) for n in range(4)]),
                                            streaming_block_size=4096)  # fmt: skip
        info = v2.ledger_info_bytes(ledger_id, last_entry_id=first + 3, closed=False)
        index = v2.index_for_blocks([(ledger_id, block.row)], data_object_length=len(block.data),
                                    ledger_infos={ledger_id: info})  # fmt: skip
        name = str(uuid.uuid4())
        driver.write(v2.segment_data_key(name), [bytes(block.data)])
        driver.write(v2.segment_index_key(name), [v2.encode_index(index)])
    driver.close()
    return url


def test_segment_planning_holds_a_few_int64s_a_segment_until_its_last_index_is_read(tmp_path: Path) -> None:
    """Every segment's runs are held until the last index is read (a later
    segment may start a ledger earlier). As Python tuples and lists each
    run was some 400 bytes, and the planned runs were all held again as
    a list before the first was packed: the plan's peak was 680 bytes a
    segment at 20,000 (bench_planning). Measured here on that code: 670
    bytes a segment (the read-ahead and the drivers' caches count in
    both); held as int64s and given a ledger at a time, 450."""
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
    assert (peak - before) / count < 560


def test_key_lists_give_back_the_keys_appended_as_a_list_would() -> None:
    from offload_core.spark.key_lists import KeyList

    keys = ["a", "", "tenant/ns/ünïcode-ledger-7", "b" * 300]
    held = KeyList()
    for key in keys:
        held.append(key)
    assert list(held) == keys and len(held) == len(keys)
    assert [held[n] for n in range(-len(keys), len(keys))] == keys + keys
    assert held[1:3] == keys[1:3] and held[::-1] == keys[::-1]
    with pytest.raises(IndexError):
        held[len(keys)]
