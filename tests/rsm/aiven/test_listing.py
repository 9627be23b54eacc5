"""The segment set of a store Aiven's plugin wrote, without a metadata
manager: complete segments, leftovers, retried and overlapping copies."""

from __future__ import annotations

from offload_core.rsm.aiven.listing import list_store
from offload_core.rsm.types import TopicIdPartition, TopicPartition
from offload_core.storage import StorageDriver
from tests.aiven_vectors import aiven_runs
from tests.rsm.aiven.stores import TOPIC_ID, put_run

RUN = aiven_runs()[0]
PARTITION = TopicIdPartition(TOPIC_ID, TopicPartition("oracle-a", 0))
OTHER_ID = "RecreatedTopicIdAAAAAA"


def test_one_complete_segment_serves_its_offsets(store: StorageDriver) -> None:
    put_run(store, RUN, prefix="tiered/")
    listing = list_store(store, "tiered/")
    assert listing.partitions() == [PARTITION]
    [served] = listing.served(PARTITION)
    assert (served.first, served.last, served.segment.segment_id.id) == (0, 51, "XpoAAAAAQACAAAAAAAAAAQ")
    assert served.segment.segment_size_in_bytes == RUN.spec["inputs"]["log"]["size"]
    assert list_store(store, "other/").partitions() == []


def test_a_retried_copy_serves_and_the_older_one_does_not(store: StorageDriver) -> None:
    put_run(store, RUN)
    put_run(store, RUN, segment_id="RetriedCopyAAAAAAAAAAA", event_ms=1700000200000)
    listing = list_store(store)
    assert [s.metadata.segment_id.id for s in listing.segments[PARTITION]] == [
        "XpoAAAAAQACAAAAAAAAAAQ", "RetriedCopyAAAAAAAAAAA"]  # fmt: skip
    assert [(r.segment.segment_id.id, r.first, r.last) for r in listing.served(PARTITION)] == [
        ("RetriedCopyAAAAAAAAAAA", 0, 51)]  # fmt: skip


def test_the_leader_epoch_lineage_comes_before_the_newest_copy(store: StorageDriver) -> None:
    put_run(store, RUN, segment_id="NewLeaderCopyAAAAAAAAA", epochs={"0": 0, "1": 20}, event_ms=1700000100000)
    put_run(store, RUN, segment_id="OldLeaderLateCopyAAAAA", epochs={"0": 0}, event_ms=1700000900000)
    served = [(r.segment.segment_id.id, r.first, r.last) for r in list_store(store).served(PARTITION)]
    assert served == [("OldLeaderLateCopyAAAAA", 0, 19), ("NewLeaderCopyAAAAAAAAA", 20, 51)]


def test_uploads_in_progress_and_deletes_are_leftovers_never_served(store: StorageDriver) -> None:
    put_run(store, RUN)
    put_run(store, RUN, segment_id="UploadingAAAAAAAAAAAAA", event_ms=1700000900000, skip=("rsm-manifest",))
    put_run(store, RUN, segment_id="DeletingAAAAAAAAAAAAAA", event_ms=1700000900000, skip=("log",))
    listing = list_store(store)
    assert [(r.segment.segment_id.id, r.first, r.last) for r in listing.served(PARTITION)] == [
        ("XpoAAAAAQACAAAAAAAAAAQ", 0, 51)]  # fmt: skip
    states = {left.key.segment_id: (left.suffixes, left.state) for left in listing.leftovers[PARTITION]}
    assert states["UploadingAAAAAAAAAAAAA"][0] == ("indexes", "log")
    assert "no manifest" in states["UploadingAAAAAAAAAAAAA"][1]
    assert states["DeletingAAAAAAAAAAAAAA"][0] == ("indexes", "rsm-manifest")
    assert "being deleted" in states["DeletingAAAAAAAAAAAAAA"][1]


def test_a_recreated_topic_lists_both_topic_ids(store: StorageDriver) -> None:
    put_run(store, RUN)
    put_run(store, RUN, topic_id=OTHER_ID)
    listing = list_store(store)
    assert listing.topic_ids(TopicPartition("oracle-a", 0)) == sorted([TOPIC_ID, OTHER_ID])
    assert len(listing.partitions()) == 2
