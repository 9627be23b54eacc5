"""offload_core.spark.export.export_pulsar: a Pulsar topic's offloaded
ledgers (v1) and streamed segments (v2) as an Iceberg table, messages
decoded and batches split, every message once, incrementally."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.errors import FormatError
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.plugins import open_driver
from offload_core.spark.export import export_pulsar
from tests.managed_ledger.test_filesystem_offloader import pulsar_profile
from tests.spark.iceberg_helpers import file_catalog, load, read_back, s3_catalog
from tests.spark.pulsar_topics import ENTRIES, append_and_offload, message_rows

pytestmark = pytest.mark.spark

TOPIC = "public/default/events"


def exported_messages(rows: Any) -> list[tuple[Any, ...]]:
    """The table's rows as :func:`message_rows` gives them, but the entry number."""
    return sorted(((row["batch_index"], row["payload"], row["key"], row["producer_name"], row["sequence_id"],
                   dict(row["properties"])) for row in rows.to_pylist()), key=repr)  # fmt: skip


def expected_messages(count: int) -> list[tuple[Any, ...]]:
    return sorted((row[1:] for row in message_rows(count)), key=repr)


@pytest.mark.parametrize(("streaming", "warehouse"), [(False, "file"), (True, "file"), (False, "s3")],
                         ids=["v1-ledgers", "v2-segments", "v1-ledgers-s3-warehouse"])  # fmt: skip
def test_messages_once_then_only_what_was_tiered_since(spark: Any, tmp_path: Path, request: Any, streaming: bool,
                                                       warehouse: str) -> None:  # fmt: skip
    data = tmp_path / "data"
    catalog = file_catalog(data) if warehouse == "file" else s3_catalog(tmp_path, request.getfixturevalue("s3"))
    append_and_offload(data, TOPIC, ENTRIES[:90], streaming=streaming)
    first = export_pulsar(spark, data, TOPIC, "pulsar.events", catalog=catalog)
    # Whole ledgers: the two sealed ones (80 entries); streamed: all 90.
    assert first.rows_added == len(message_rows(90 if streaming else 80))
    # Reopening seals the third ledger (10 entries): whole ledgers are then 90
    # entries tiered, the fourth (30) still open; streamed, all 120.
    append_and_offload(data, TOPIC, ENTRIES[90:], streaming=streaming)
    second = export_pulsar(spark, data, TOPIC, "pulsar.events", catalog=catalog)
    tiered = 120 if streaming else 90
    assert first.rows_added + second.rows_added == len(message_rows(tiered))
    rows = read_back(catalog, "pulsar.events")
    assert exported_messages(rows) == expected_messages(tiered)
    assert set(rows["topic"].to_pylist()) == {TOPIC} and set(rows["partition"].to_pylist()) == {-1}
    table = load(catalog, "pulsar.events")
    assert table.properties["offload.source"] == "pulsar-offload" and table.properties["offload.topic"] == TOPIC
    last = max(zip(rows["ledger_id"].to_pylist(), rows["entry_id"].to_pylist(), strict=True))
    assert second.watermarks == {(TOPIC, -1): last}
    assert rows["publish_time"].type.tz == "UTC" and None not in rows["publish_time"].to_pylist()


def test_a_partitioned_topic_with_plain_entries(spark: Any, tmp_path: Path) -> None:
    """Each -partition-N is one partition of the table; entries that are not
    Pulsar messages are a row each with the message columns null."""
    data = tmp_path / "data"
    append_and_offload(data, TOPIC + "-partition-0", ENTRIES[:80], streaming=False)
    append_and_offload(data, TOPIC + "-partition-1", [b"plain %d" % n for n in range(45)], streaming=False)
    result = export_pulsar(spark, data, TOPIC, "pulsar.parts", catalog=file_catalog(data))
    assert set(result.watermarks) == {(TOPIC, 0), (TOPIC, 1)}
    rows = read_back(file_catalog(data), "pulsar.parts")
    by_partition = {p: [r for r in rows.to_pylist() if r["partition"] == p] for p in (0, 1)}
    assert len(by_partition[0]) == len(message_rows(80))
    assert sorted(r["payload"] for r in by_partition[1]) == sorted(b"plain %d" % n for n in range(40))
    assert {r["publish_time"] for r in by_partition[1]} == {None}


def test_a_damaged_ledger_object_fails_the_run_naming_it(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    append_and_offload(data, TOPIC, ENTRIES[:85], streaming=False)
    driver = open_driver(f"file://{data / 'bucket'}")
    damaged = find_offloaded_ledgers(driver)[1]
    path = data / "bucket" / damaged.data_key
    body = bytearray(path.read_bytes())
    body[0] ^= 0xFF  # the first block's magic
    path.write_bytes(bytes(body))
    with pytest.raises(FormatError, match=f"damaged source object .*{damaged.data_key} at byte 0") as failed:
        export_pulsar(spark, data, TOPIC, "pulsar.damaged", catalog=file_catalog(data))
    assert "nothing was committed" in str(failed.value)
    assert load(file_catalog(data), "pulsar.damaged").current_snapshot() is None


def test_a_copy_an_abandoned_offload_left_is_not_read(spark: Any, tmp_path: Path) -> None:
    """The store holds a second, complete copy of a ledger (an offload
    abandoned after writing both objects): only the uuid the metadata
    names is read. Before, every message of that ledger came out twice."""
    data = tmp_path / "data"
    append_and_offload(data, TOPIC, ENTRIES[:85], streaming=False)
    url = f"file://{data / 'bucket'}"
    (first, _) = sorted(find_offloaded_ledgers(open_driver(url)), key=lambda ledger: ledger.ledger_id)
    open_offloader(url).offload(InMemoryReadHandle(first.ledger_id, ENTRIES[:40]), uuid.uuid4())
    result = export_pulsar(spark, data, TOPIC, "pulsar.copies", catalog=file_catalog(data))
    assert result.rows_added == len(message_rows(80))
    assert exported_messages(read_back(file_catalog(data), "pulsar.copies")) == expected_messages(80)


def test_a_topic_the_file_system_offloader_offloaded(spark: Any, tmp_path: Path) -> None:
    """managedLedgerOffloadDriver="filesystem": the ledgers are MapFiles
    under the storageBasePath their offload recorded, not in a bucket."""
    data, hadoop = tmp_path / "data", tmp_path / "hadoop"
    settings = {"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "file:///",
                "fileSystemProfilePath": str(pulsar_profile(tmp_path, str(hadoop)))}  # fmt: skip
    append_and_offload(data, TOPIC, ENTRIES[:85], streaming=False, settings=settings)
    assert list(hadoop.rglob("data")) and not (data / "bucket").exists()
    result = export_pulsar(spark, data, TOPIC, "pulsar.mapfiles", catalog=file_catalog(data))
    assert result.rows_added == len(message_rows(80))
    assert exported_messages(read_back(file_catalog(data), "pulsar.mapfiles")) == expected_messages(80)


def test_a_mapfile_copy_an_abandoned_offload_left_is_not_exported(spark: Any, tmp_path: Path) -> None:
    """A second ``LEDGER-UUID`` MapFile directory of a ledger (an offload
    abandoned after writing it): only the uuid the metadata names is read."""
    data, hadoop = tmp_path / "data", tmp_path / "hadoop"
    settings = {"managedLedgerOffloadDriver": "filesystem", "fileSystemURI": "file:///",
                "fileSystemProfilePath": str(pulsar_profile(tmp_path, str(hadoop)))}  # fmt: skip
    append_and_offload(data, TOPIC, ENTRIES[:85], streaming=False, settings=settings)
    offloaded = sorted(path.parent for path in hadoop.rglob("data") if path.parent.name.count("-") == 5)
    ledger_id = offloaded[0].name.split("-", 1)[0]
    shutil.copytree(offloaded[0], offloaded[0].with_name(f"{ledger_id}-{uuid.uuid4()}"))
    result = export_pulsar(spark, data, TOPIC, "pulsar.mapfile_copies", catalog=file_catalog(data))
    assert result.rows_added == len(message_rows(80))
    assert exported_messages(read_back(file_catalog(data), "pulsar.mapfile_copies")) == expected_messages(80)
