"""offload_core.spark.export.export_kafka: a Kafka topic's tiered segments
as an Iceberg table, every record once, incrementally."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from offload_core.spark.export import export_kafka
from tests.rsm.segments import TOPIC_ID, numbered_segments, value, write_partition
from tests.spark.iceberg_helpers import file_catalog, load, read_back, s3_catalog

pytestmark = pytest.mark.spark

HOUR = 3_600_000


def tier(root: Path, url: str, name: str, segments: int, copied: slice) -> None:
    """Write partition directory ``name`` of ``segments`` segments of 100
    records (one every 20 minutes: several days), tier the ``copied`` ones."""
    directory = root / "kafka" / name
    if not directory.exists():
        write_partition(root / "kafka", name, numbered_segments(segments, step_ts=HOUR // 3))
    tp, found = read_partition_dir(directory)
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    for segment in found[copied]:
        rsm.copy_log_segment(tp, segment.data)


@pytest.mark.parametrize("warehouse", ["file", "s3"])
def test_every_record_once_then_only_what_was_tiered_since(spark: Any, tmp_path: Path, request: Any,
                                                           warehouse: str) -> None:  # fmt: skip
    catalog = file_catalog(tmp_path) if warehouse == "file" else s3_catalog(tmp_path, request.getfixturevalue("s3"))
    url = f"file://{tmp_path / 'store'}"
    tier(tmp_path, url, "orders-0", 4, slice(0, 2))
    tier(tmp_path, url, "orders-1", 2, slice(0, 1))
    first = export_kafka(spark, url, "orders", "kafka.orders", options={"prefix": "tiered"}, catalog=catalog)
    assert (first.rows_added, first.watermarks) == (300, {("orders", 0): (199,), ("orders", 1): (99,)})
    tier(tmp_path, url, "orders-0", 4, slice(2, 3))
    second = export_kafka(spark, url, "orders", "kafka.orders", options={"prefix": "tiered"}, catalog=catalog)
    assert second.rows_added == 100 and second.watermarks[("orders", 0)] == (299,)
    assert second.snapshot_id != first.snapshot_id
    rows = read_back(catalog, "kafka.orders").sort_by([("partition", "ascending"), ("offset", "ascending")])
    got = list(zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True))
    assert got == [(0, o) for o in range(300)] + [(1, o) for o in range(100)]
    assert rows["value"].to_pylist()[:2] == [value(0), value(1)]
    assert rows["headers"].to_pylist()[0] == [{"key": "h", "value": b"v"}]
    table = load(catalog, "kafka.orders")
    assert table.properties["offload.source"] == "kafka-remote" and table.properties["offload.topic"] == "orders"
    assert {f.name for f in table.spec().fields} == {"timestamp_day", "partition"}
    days = {f.partition[0] for f in table.scan().plan_files() for f in [f.file]}
    assert len(days) > 2  # a file per day and partition
    summary = table.current_snapshot().summary
    assert summary["offload.watermarks"] == '{"orders": {"0": [299], "1": [99]}}'
    again = export_kafka(spark, url, "orders", "kafka.orders", options={"prefix": "tiered"}, catalog=catalog)
    assert (again.rows_added, again.snapshot_id) == (0, None)
    assert load(catalog, "kafka.orders").current_snapshot().snapshot_id == second.snapshot_id


def test_an_export_keeps_the_sessions_registered_sources(spark: Any, tmp_path: Path) -> None:
    """The session has both sources already: the export registers neither
    again (each replacement made Spark log a warning)."""
    manager = spark._jsparkSession.sessionState().dataSourceManager()

    def registered() -> list[int]:
        return [spark._jvm.System.identityHashCode(manager.lookupDataSource(name))
                for name in ("pulsar-offload", "kafka-remote")]  # fmt: skip

    before = registered()
    url = f"file://{tmp_path / 'store'}"
    tier(tmp_path, url, "orders-0", 1, slice(0, 1))
    catalog = file_catalog(tmp_path)
    once = export_kafka(spark, url, "orders", "kafka.once", options={"prefix": "tiered"}, catalog=catalog)
    assert once.rows_added == 100
    assert registered() == before


RECREATED = "q2Cn5nDXQ8uTqPpQ4Yt3Ng"  # the topic id of orders once deleted and recreated


def test_a_recreated_topic_is_exported_from_its_start(spark: Any, tmp_path: Path) -> None:
    """Deleted (its remote log with it) and recreated under a new topic id,
    the topic's offsets start at 0 again: the new incarnation is exported
    from its start, not from the old one's watermark, and the table says it
    holds rows of the old one."""
    url, catalog = f"file://{tmp_path / 'store'}", file_catalog(tmp_path)
    tier(tmp_path, url, "orders-0", 3, slice(0, 2))
    assert export_kafka(spark, url, "orders", "kafka.orders", options={"prefix": "tiered"},
                        catalog=catalog).rows_added == 200  # fmt: skip
    for directory in (tmp_path / "store" / "tiered").iterdir():
        assert TOPIC_ID in directory.name
        shutil.rmtree(directory)
    tp, found = read_partition_dir(write_partition(tmp_path / "recreated", "orders-0", numbered_segments(3),
                                                   topic_id=RECREATED))  # fmt: skip
    rsm = RemoteStorageManager(open_driver(url), prefix="tiered")
    rsm.copy_log_segment(tp, found[0].data)
    result = export_kafka(spark, url, "orders", "kafka.orders", options={"prefix": "tiered"}, catalog=catalog)
    assert (result.rows_added, result.watermarks) == (100, {("orders", 0): (99,)})
    assert result.replaced_topic_ids == {"orders": [TOPIC_ID]}
    table = load(catalog, "kafka.orders")
    assert table.properties["offload.replaced-topic-ids"] == f'{{"orders": ["{TOPIC_ID}"]}}'
    summary = table.current_snapshot().summary
    assert summary["offload.topic-ids"] == f'{{"orders": {{"0": "{RECREATED}"}}}}'
    rsm.copy_log_segment(tp, found[1].data)
    later = export_kafka(spark, url, "orders", "kafka.orders", options={"prefix": "tiered"}, catalog=catalog)
    assert (later.rows_added, later.watermarks) == (100, {("orders", 0): (199,)})
    assert later.replaced_topic_ids == {"orders": [TOPIC_ID]}
    offsets = sorted(read_back(catalog, "kafka.orders")["offset"].to_pylist())
    assert offsets == sorted([*range(200), *range(200)])
