"""offload spark export pulsar / kafka from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from offload_core.cli import main
from offload_core.plugins import open_driver
from offload_core.rsm import RemoteStorageManager, read_partition_dir
from tests.aiven_vectors import aiven_runs, server_properties
from tests.rsm.segments import numbered_segments, write_partition
from tests.spark.iceberg_helpers import file_catalog, read_back
from tests.spark.pulsar_topics import ENTRIES, append_and_offload, message_rows

pytestmark = pytest.mark.spark


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_export_pulsar_with_the_default_catalog(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    append_and_offload(data, "public/default/cli", ENTRIES[:45], streaming=False)
    result = run("spark", "export", "pulsar", "public/default/cli", "--data-dir", str(data), "--table", "pulsar.cli",
                 "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rows_added"] == len(message_rows(40)) and isinstance(summary["snapshot_id"], int)
    assert (data / "iceberg" / "catalog.db").is_file()
    assert read_back(file_catalog(data), "pulsar.cli").num_rows == summary["rows_added"]
    again = run("spark", "export", "pulsar", "public/default/cli", "--data-dir", str(data), "--table", "pulsar.cli")
    assert again.exit_code == 0 and "nothing tiered since the last export; no snapshot committed" in again.stdout


def test_export_kafka_with_catalog_properties_and_clear_errors(spark: Any, tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'store'}"
    tp, (segment, _) = read_partition_dir(write_partition(tmp_path, "views-0", numbered_segments(2)))
    RemoteStorageManager(open_driver(url), prefix="t").copy_log_segment(tp, segment.data)
    catalog = [f"--catalog={k}={v}" for k, v in file_catalog(tmp_path / "elsewhere").items()]
    result = run("spark", "export", "kafka", url, "views", "--prefix", "t", "--table", "kafka.views", *catalog)
    assert result.exit_code == 0, result.output
    assert "kafka.views: 100 row(s)" in result.stdout and "views partition 0: exported to 99" in result.stdout
    missing = run("spark", "export", "kafka", url, "clicks", "--prefix", "t", "--table", "kafka.clicks", *catalog)
    assert missing.exit_code == 1 and "NotFoundError: Kafka topic clicks under" in missing.output
    assert "Traceback" not in missing.output
    bad = run("spark", "export", "kafka", url, "views", "--table", "views", "--catalog", "oops")
    assert bad.exit_code == 2 and "'oops' is not KEY=VALUE" in bad.output


def test_export_kafka_in_aivens_layout_from_the_brokers_config(spark: Any, tmp_path: Path) -> None:
    """The shared vectors' segment, tiered by Aiven's plugin: no URL, the
    store and key prefix from server.properties; every record once."""
    config = server_properties(tmp_path / "server.properties", aiven_runs()[0])
    catalog = [f"--catalog={k}={v}" for k, v in file_catalog(tmp_path).items()]
    args = ["spark", "export", "kafka", "oracle-a", "--layout", "aiven", "--config", str(config), *catalog]
    result = run(*args, "--table", "kafka.aiven", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["rows_added"] == 52
    rows = read_back(file_catalog(tmp_path), "kafka.aiven")
    expected = spark.read.format("kafka-remote").option("layout", "aiven").option("config", str(config))
    expected = expected.option("topic", "oracle-a").load().collect()
    assert sorted(zip(rows["offset"].to_pylist(), rows["value"].to_pylist(), strict=True)) == sorted(
        (row.offset, row.value) for row in expected
    )
    assert len(set(rows["offset"].to_pylist())) == 52
    again = run(*args, "--table", "kafka.aiven")
    assert again.exit_code == 0 and "no snapshot committed" in again.stdout, again.output
    no_store = run("spark", "export", "kafka", "oracle-a", "--table", "kafka.aiven")
    assert no_store.exit_code == 2 and "Missing argument 'TOPIC'" in no_store.output
