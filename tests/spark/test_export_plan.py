"""What an export plans and records, without running Spark: the Pulsar
plan stops at the first ledger not tiered to its end, starts after the
watermark, and reads each ledger from the store its metadata recorded;
watermarks merge forward and a damaged record is a FormatError; a Kafka
watermark holds only for the topic id it was recorded for."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.errors import FormatError, NotFoundError
from offload_core.managed_ledger import Broker, write_offload
from offload_core.spark.export.kafka_plan import kafka_start
from offload_core.spark.export.pulsar_plan import plan_topic
from offload_core.spark.export.watermarks import (
    merged,
    replaced_topic_ids_of,
    summary,
    topic_ids_of,
    watermarks_of,
)
from tests.spark.pulsar_topics import config

pytestmark = pytest.mark.spark

TOPIC = "public/default/gaps"


def offloaded(data: Path, which: list[int]) -> list[int]:
    """Four sealed ledgers of 40 entries (and an open one); only the
    ``which``-th (0-based) offloaded, as a backfill that failed on the
    others leaves them. The ledger ids."""
    with Broker(data, config(streaming=False)) as broker:
        ledger = broker.topic(TOPIC)
        for n in range(165):
            ledger.append(b"entry %d" % n)
        ids = ledger.offloadable_ledgers()
        for position in which:
            ticket = ledger.prepare_offload(ids[position])
            write_offload(ticket)
            ledger.complete_offload(ticket)
    return ids


def entries_option(data: Path, marks: dict[tuple[str, int], tuple[int, ...]]) -> list[str]:
    return [dict(read.options)["entries"] for read in plan_topic(data, TOPIC, marks)]


def test_the_plan_stops_at_the_first_ledger_not_tiered(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first, second, _third, _fourth = offloaded(data, [0, 1, 3])  # the third failed
    assert entries_option(data, {}) == [f"{first}:0-39,{second}:0-39"]
    assert entries_option(data, {(TOPIC, -1): (first, 9)}) == [f"{first}:10-39,{second}:0-39"]
    assert entries_option(data, {(TOPIC, -1): (second, 39)}) == []  # nothing after the gap yet
    (read,) = plan_topic(data, TOPIC, {})
    assert dict(read.options)["driver.root"] == str((data / "bucket").resolve())
    assert (read.topic, read.partition, dict(read.options)["path"]) == (TOPIC, -1, "local-directory")
    named = [pair.partition(":")[0] for pair in dict(read.options)["ledgerUuids"].split(",")]
    assert named == [str(first), str(second)]


def test_an_unknown_topic_or_data_dir_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="holds no broker metadata"):
        plan_topic(tmp_path, TOPIC, {})
    offloaded(tmp_path / "data", [])
    with pytest.raises(NotFoundError, match="no topic public/default/other"):
        plan_topic(tmp_path / "data", "public/default/other", {})


def test_watermarks_round_trip_merge_forward_and_refuse_damage() -> None:
    marks = {("orders", 0): (5, 9), ("orders", 1): (2, 0)}
    recorded = summary("run", "pulsar-offload", marks, 10)
    assert watermarks_of([{}, recorded, summary("older", "pulsar-offload", {}, 0)]) == marks
    assert merged(marks, {("orders", 0): (6, 0), ("clicks", -1): (1, 1)}) == {
        ("orders", 0): (6, 0), ("orders", 1): (2, 0), ("clicks", -1): (1, 1)}  # fmt: skip
    with pytest.raises(FormatError, match="offload.watermarks=.* export to a new --table"):
        watermarks_of([{"offload.watermarks": "{not json"}])


def test_ledger_uuids_option_is_checked() -> None:
    from offload_core.errors import ConfigError
    from offload_core.spark.read_options import parse_read_options

    uid = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
    assert parse_read_options({"path": "memory://", "ledgerUuids": f"7:{uid.upper()}"}).ledger_uuids == {(7, uid)}
    assert parse_read_options({"path": "memory://", "ledgerUuids": ""}).ledger_uuids == frozenset()
    assert parse_read_options({"path": "memory://"}).ledger_uuids is None
    with pytest.raises(ConfigError, match="bad ledgerUuids pair '7-x'; write LEDGER:UUID"):
        parse_read_options({"path": "memory://", "ledgerUuids": "7-x"})


def test_a_kafka_watermark_holds_for_its_topic_id_only() -> None:
    marks = {("orders", 0): (199,), ("orders", 1): (99,), ("orders", 2): (49,)}
    recorded = {("orders", 0): "OLD", ("orders", 1): "OLD", ("orders", 2): "OLD"}
    # Partition 0 recreated, 1 unchanged, 2 no longer in the store.
    start = kafka_start(marks, recorded, {}, {("orders", 0): "NEW", ("orders", 1): "OLD"})
    assert start.marks == {("orders", 1): (99,), ("orders", 2): (49,)}
    assert start.topic_ids == {("orders", 0): "NEW", ("orders", 1): "OLD", ("orders", 2): "OLD"}
    assert start.replaced == {"orders": ["OLD"]}
    assert start.starting_offsets("orders") == '{"orders": {"1": 100, "2": 50}}'
    again = kafka_start(start.marks, start.topic_ids, start.replaced, {("orders", 0): "NEW", ("orders", 1): "OLD"})
    assert again.replaced == {"orders": ["OLD"]}


def test_watermarks_from_before_topic_ids_were_kept_still_count() -> None:
    """A table an earlier version exported: no offload.topic-ids in its summaries."""
    old = [{"offload.watermarks": '{"orders": {"0": [199]}}'}]
    assert (topic_ids_of(old), replaced_topic_ids_of(old)) == ({}, {})
    start = kafka_start(watermarks_of(old), topic_ids_of(old), replaced_topic_ids_of(old), {("orders", 0): "NEW"})
    assert (start.marks, start.topic_ids, start.replaced) == ({("orders", 0): (199,)}, {("orders", 0): "NEW"}, {})
    with pytest.raises(FormatError, match="offload.topic-ids"):
        topic_ids_of([{"offload.watermarks": "{}", "offload.topic-ids": "[1]"}])
