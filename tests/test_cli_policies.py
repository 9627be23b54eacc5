"""pulsar-admin's offload-policy verbs for namespaces and topics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from offload_core.cli.units import parse_duration_ms, parse_size
from offload_core.errors import ConfigError


def offload(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "broker.toml").touch()
    return subprocess.run(
        [sys.executable, "-m", "offload_core.cli", *args, "--data-dir", str(tmp_path / "data"),
         "--config", str(tmp_path / "broker.toml")],
        capture_output=True, text=True,
    )  # fmt: skip


def policies(tmp_path: Path, level: str, name: str) -> dict[str, dict[str, object]]:
    result = offload(tmp_path, level, "get-offload-policies", name, "--json")
    assert result.returncode == 0, result.stderr
    document: dict[str, dict[str, dict[str, object]]] = json.loads(result.stdout)
    return document["policies"]


def test_set_get_remove_with_levels(tmp_path: Path) -> None:
    ok = offload(tmp_path, "namespaces", "set-offload-policies", "acme/prod", "-d", "aws-s3", "-b", "cold",
                 "--offload-after-threshold", "10M", "--offload-deletion-lag", "4h", "--max-block-size", "64M",
                 "--offloaded-read-priority", "bookkeeper-first")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert offload(tmp_path, "topics", "set-offload-threshold", "acme/prod/orders", "--size", "1G", "--time", "2h")\
        .returncode == 0  # fmt: skip
    topic = policies(tmp_path, "topics", "acme/prod/orders")
    assert topic["offload_threshold_bytes"] == {"value": 1 << 30, "from": "topic"}
    assert topic["offload_threshold_seconds"] == {"value": 7200, "from": "topic"}
    assert topic["driver"] == {"value": "aws-s3", "from": "namespace"}
    assert topic["deletion_lag_ms"] == {"value": 4 * 3600 * 1000, "from": "namespace"}
    assert topic["read_priority"] == {"value": "BOOKKEEPER_FIRST", "from": "namespace"}
    assert topic["read_buffer_size"] == {"value": 1 << 20, "from": "broker"}
    lag = json.loads(offload(tmp_path, "topics", "get-offload-deletion-lag", "acme/prod/orders", "--json").stdout)
    assert lag["policies"]["deletion_lag_ms"]["from"] == "namespace"
    assert offload(tmp_path, "topics", "remove-offload-threshold", "acme/prod/orders").returncode == 0
    assert policies(tmp_path, "topics", "acme/prod/orders")["offload_threshold_bytes"]["from"] == "namespace"
    assert offload(tmp_path, "namespaces", "set-offload-deletion-lag", "acme/prod", "--lag", "10m").returncode == 0
    assert policies(tmp_path, "namespaces", "acme/prod")["deletion_lag_ms"]["value"] == 600_000
    assert offload(tmp_path, "namespaces", "remove-offload-deletion-lag", "acme/prod").returncode == 0
    assert offload(tmp_path, "namespaces", "remove-offload-policies", "acme/prod").returncode == 0
    after = policies(tmp_path, "topics", "acme/prod/orders")
    assert {row["from"] for row in after.values()} == {"broker"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["set-offload-policies", "acme/prod", "-d", "nosuchdriver"], "no storage driver named 'nosuchdriver'"),
        (["set-offload-threshold", "acme/prod", "--size", "10Q"], "is not a size"),
        (["set-offload-deletion-lag", "acme/prod", "--lag", "soon"], "is not a duration"),
        (["set-offload-deletion-lag", "acme/prod", "--lag", "-1"], "is not a duration"),
        (["set-offload-policies", "acme/prod"], "give at least one policy option"),
        (["set-offload-policies", "acme/prod", "--offloaded-read-priority", "sometimes"], "read priority"),
    ],
)
def test_invalid_settings_are_refused_with_the_reason(tmp_path: Path, args: list[str], message: str) -> None:
    result = offload(tmp_path, "namespaces", *args)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert message in result.stderr


@pytest.mark.parametrize("level", ["topics", "namespaces"])
def test_a_block_too_small_to_offload_is_refused_and_nothing_stored(tmp_path: Path, level: str) -> None:
    name = "acme/prod/orders" if level == "topics" else "acme/prod"
    result = offload(tmp_path, level, "set-offload-policies", name, "--max-block-size", "1", "-b", "cold")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0
    assert "MaxBlockSizeInBytes" in result.stderr and "at least 140" in result.stderr
    stored = policies(tmp_path, level, name)
    assert stored["max_block_size"]["from"] == "broker" and stored["bucket"]["from"] == "broker"


def test_a_config_naming_an_unknown_transform_is_refused_by_every_verb(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text('managedLedgerOffloadTransforms = "zstd,nope"\n')
    result = offload(tmp_path, "topics", "get-offload-policies", "acme/prod/orders")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "managedLedgerOffloadTransforms" in result.stderr and "'nope'" in result.stderr


def test_a_threshold_above_retention_is_refused(tmp_path: Path) -> None:
    (tmp_path / "broker.toml").write_text("defaultRetentionSizeInMB = 100\n")
    result = offload(tmp_path, "topics", "set-offload-threshold", "acme/prod/orders", "--size", "1G")
    assert result.returncode != 0 and "must be below the retention size" in result.stderr


def test_units() -> None:
    assert [parse_size(t, what="x") for t in ("0", "512", "10k", "10M", "1g", "2T")] == [
        0, 512, 10 << 10, 10 << 20, 1 << 30, 2 << 40,
    ]  # fmt: skip
    assert parse_size("-1", what="x", allow_off=True) == -1
    assert [parse_duration_ms(t, what="x") for t in ("0", "30", "30s", "5m", "4h", "2d", "1w")] == [
        0, 30_000, 30_000, 300_000, 14_400_000, 172_800_000, 604_800_000,
    ]  # fmt: skip
    for bad in ("-1", "1.5M", "M", "", "10 M", "-2", "-1k"):
        with pytest.raises(ConfigError):
            parse_size(bad, what="x")
    with pytest.raises(ConfigError, match="too large"):
        parse_size("99999999999t", what="x")


PROFILE = """<?xml version='1.0' encoding='UTF-8'?>
<configuration>
    <property><name>hadoop.tmp.dir</name><value>pulsar</value></property>
    <property><name>io.seqfile.compression.type</name><value>BLOCK</value></property>
</configuration>
"""


def test_the_file_system_offloader_settings_are_set_at_either_level(tmp_path: Path) -> None:
    profile = tmp_path / "filesystem_offload_core_site.xml"
    profile.write_text(PROFILE)
    ok = offload(tmp_path, "namespaces", "set-offload-policies", "acme/prod", "-d", "filesystem",
                 "--file-system-uri", "file:///", "--file-system-profile-path", str(profile))  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert "fileSystemURI" in ok.stdout and str(profile) in ok.stdout
    hdfs = offload(tmp_path, "topics", "set-offload-policies", "acme/prod/orders",
                   "--file-system-uri", "hdfs://namenode:8020")  # fmt: skip
    assert hdfs.returncode == 0, hdfs.stderr
    topic = policies(tmp_path, "topics", "acme/prod/orders")
    assert topic["driver"] == {"value": "filesystem", "from": "namespace"}
    assert topic["file_system_uri"] == {"value": "hdfs://namenode:8020", "from": "topic"}
    assert topic["file_system_profile_path"] == {"value": str(profile), "from": "namespace"}
    assert offload(tmp_path, "namespaces", "remove-offload-policies", "acme/prod").returncode == 0
    namespace = policies(tmp_path, "namespaces", "acme/prod")
    assert namespace["file_system_profile_path"] == {"value": None, "from": "broker"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--file-system-uri", "s3://bucket"], "fileSystemURI must be file:///... or hdfs://namenode:port"),
        (["--file-system-profile-path", "/nowhere/site.xml"], "fileSystemProfilePath names '/nowhere/site.xml'"),
        (["-d", "filesystem"], 'managedLedgerOffloadDriver = "filesystem" now means'),
    ],
)
def test_bad_file_system_settings_are_refused_and_nothing_stored(tmp_path: Path, args: list[str], message: str) -> None:
    result = offload(tmp_path, "namespaces", "set-offload-policies", "acme/prod", *args)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert message in result.stderr
    assert {row["from"] for row in policies(tmp_path, "namespaces", "acme/prod").values()} == {"broker"}


@pytest.mark.parametrize(
    ("set_as", "read_as"),
    [("persistent://acme/prod/orders", "acme/prod/orders"), ("acme/prod/orders", "persistent://acme/prod/orders")],
)
def test_a_topic_policy_set_under_one_spelling_is_read_under_the_other(
    tmp_path: Path, set_as: str, read_as: str
) -> None:
    assert offload(tmp_path, "topics", "set-offload-policies", set_as, "-b", "cold").returncode == 0
    assert policies(tmp_path, "topics", read_as)["bucket"] == {"value": "cold", "from": "topic"}
    assert offload(tmp_path, "topics", "set-tiered-read-priority", set_as, "bookkeeper-first").returncode == 0
    shown = json.loads(offload(tmp_path, "topics", "get-tiered-read-priority", read_as, "--json").stdout)
    assert shown == {"topic": "acme/prod/orders", "set": "BOOKKEEPER_FIRST", "effective": "BOOKKEEPER_FIRST"}
    assert offload(tmp_path, "topics", "remove-offload-policies", read_as).returncode == 0
    assert policies(tmp_path, "topics", set_as)["bucket"]["from"] == "broker"


def test_a_bucket_set_nowhere_shows_the_one_the_broker_uses(tmp_path: Path) -> None:
    default = str((tmp_path / "data" / "bucket").resolve())
    assert policies(tmp_path, "namespaces", "acme/prod")["bucket"] == {"value": default, "from": "broker"}
    text = offload(tmp_path, "topics", "get-offload-policies", "acme/prod/orders").stdout
    assert next(line for line in text.splitlines() if line.startswith("bucket ")).split() == [
        "bucket", default, "(broker)"
    ]  # fmt: skip
    # A cloud store has no default bucket: none is shown.
    assert offload(tmp_path, "namespaces", "set-offload-policies", "acme/prod", "-d", "aws-s3").returncode == 0
    assert policies(tmp_path, "namespaces", "acme/prod")["bucket"] == {"value": None, "from": "broker"}
