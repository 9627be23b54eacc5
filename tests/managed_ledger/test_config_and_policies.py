"""TOML config with Pulsar keys; policies at broker, namespace and topic level."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.errors import ConfigError, ConflictError
from offload_core.managed_ledger import (
    Broker,
    FsyncPolicy,
    OffloadPolicies,
    PolicyStore,
    ReadPriority,
    SqliteMetadataStore,
    TopicName,
    load_config,
    parse_config,
)
from offload_core.managed_ledger.config import DEFAULT_POLICIES
from offload_core.managed_ledger.lifecycle.policies import parse_namespace


def test_toml_with_pulsar_keys(tmp_path: Path) -> None:
    path = tmp_path / "broker.toml"
    path.write_text(
        'managedLedgerOffloadDriver = "aws-s3"\n'
        'managedLedgerOffloadBucket = "cold"\n'
        'managedLedgerOffloadServiceEndpoint = "http://127.0.0.1:9000"\n'
        'managedLedgerOffloadRegion = "eu-west-1"\n'
        "managedLedgerOffloadMaxBlockSizeInBytes = 8388608\n"
        "managedLedgerOffloadReadBufferSizeInBytes = 65536\n"
        "managedLedgerOffloadThresholdInBytes = 1024\n"
        "managedLedgerOffloadThresholdInSeconds = 60\n"
        "managedLedgerOffloadDeletionLagMs = 0\n"
        'managedLedgerDataReadPriority = "bookkeeper-first"\n'
        "managedLedgerMaxEntriesPerLedger = 100\n"
        "managedLedgerMaxSizePerLedgerMbytes = 10\n"
        "managedLedgerMaxLedgerRolloverTimeMinutes = 5\n"
        'managedLedgerFsyncPolicy = "always"\n'
    )
    config = load_config(path)
    assert config.policies.driver == "aws-s3" and config.policies.bucket == "cold"
    assert config.policies.endpoint == "http://127.0.0.1:9000" and config.policies.region == "eu-west-1"
    assert (config.policies.max_block_size, config.policies.read_buffer_size) == (8388608, 65536)
    assert (config.policies.offload_threshold_bytes, config.policies.offload_threshold_seconds) == (1024, 60)
    assert config.policies.read_priority is ReadPriority.BOOKKEEPER_FIRST
    assert (config.max_entries_per_ledger, config.max_size_per_ledger_mb, config.max_ledger_rollover_minutes) == (
        100,
        10,
        5,
    )
    assert config.fsync_policy is FsyncPolicy.ALWAYS


def test_defaults_are_pulsars_with_unlimited_retention() -> None:
    config = load_config(None)
    assert config.policies == DEFAULT_POLICIES
    assert config.policies.read_priority is ReadPriority.OFFLOADED_FIRST
    assert config.policies.max_block_size == 64 << 20 and config.policies.read_buffer_size == 1 << 20
    assert config.policies.deletion_lag_ms == 4 * 3600 * 1000
    assert config.policies.retention_size_mb == -1


def test_unknown_key_gets_a_suggestion() -> None:
    suggestion = "'managedLedgerOffloadThresholdInByte'.*did you mean 'managedLedgerOffloadThresholdInBytes'"
    with pytest.raises(ConfigError, match=suggestion):
        parse_config({"managedLedgerOffloadThresholdInByte": 1})
    with pytest.raises(ConfigError, match="known keys"):
        parse_config({"zzz": 1})


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"managedLedgerOffloadThresholdInBytes": "10"}, "must be an integer"),
        ({"managedLedgerOffloadMaxBlockSizeInBytes": 0}, "must be positive"),
        ({"managedLedgerDataReadPriority": "fastest"}, "not one of"),
        ({"managedLedgerOffloadBucket": 5}, "must be a string"),
        ({"managedLedgerMaxEntriesPerLedger": True}, "must be an integer"),
        ({"managedLedgerOffloadThresholdInBytes": 2 << 20, "defaultRetentionSizeInMB": 1}, "below the retention size"),
        ({"managedLedgerOffloadThresholdInSeconds": 600, "defaultRetentionTimeInMinutes": 10}, "below the retention"),
        ({"managedLedgerOffloadDeletionLagMs": -5}, "must not be negative"),
        ({"managedLedgerOffloadMaxBlockSizeInBytes": 139}, "MaxBlockSizeInBytes.*too small.*at least 140"),
        ({"s3ManagedLedgerOffloadMaxBlockSizeInBytes": 1}, "MaxBlockSizeInBytes.*too small.*at least 140"),
    ],
)
def test_bad_values_name_the_key(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(values)


def test_an_unknown_transform_is_refused_at_load_naming_the_key_the_name_and_the_installed_ones() -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config({"managedLedgerOffloadTransforms": "zstd,nope"})
    message = str(refused.value)
    assert "managedLedgerOffloadTransforms" in message and "'nope'" in message
    assert all(name in message for name in ("zstd", "crc32c", "aes-gcm")), message
    assert parse_config({"managedLedgerOffloadTransforms": "zstd,crc32c"}).policies.transforms == "zstd,crc32c"


def test_a_policy_update_naming_an_unknown_transform_is_refused_and_nothing_stored(tmp_path: Path) -> None:
    with Broker(tmp_path / "data", parse_config({"retentionCheckIntervalInSeconds": 0})) as broker:
        with pytest.raises(ConfigError, match="managedLedgerOffloadTransforms.*'nope'.*installed: .*zstd"):
            broker.policies.update("topic", "acme/prod/orders", transforms="zstd,nope")
        assert broker.policies.get("topic", "acme/prod/orders") == OffloadPolicies()
        broker.policies.update("topic", "acme/prod/orders", transforms="zstd")


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("this is = = not toml")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(tmp_path / "bad.toml")
    (tmp_path / "nested.toml").write_text("[offload]\nx = 1\n")
    with pytest.raises(ConfigError, match="flat"):
        load_config(tmp_path / "nested.toml")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bookkeeper-first", ReadPriority.BOOKKEEPER_FIRST),
        ("tiered-storage-first", ReadPriority.OFFLOADED_FIRST),
        ("OFFLOADED_FIRST", ReadPriority.OFFLOADED_FIRST),
        ("offloaded_only", ReadPriority.OFFLOADED_ONLY),
        ("Bookkeeper_Only", ReadPriority.BOOKKEEPER_ONLY),
    ],
)
def test_read_priority_names(text: str, expected: ReadPriority) -> None:
    assert ReadPriority.parse(text) is expected


def test_most_specific_level_wins(tmp_path: Path) -> None:
    policies = PolicyStore(SqliteMetadataStore(tmp_path / "m.db"), DEFAULT_POLICIES)
    topic = TopicName.parse("acme/prod/orders")
    other = TopicName.parse("acme/prod/payments")
    policies.update("namespace", "acme/prod", read_priority=ReadPriority.BOOKKEEPER_FIRST, deletion_lag_ms=5)
    policies.update("topic", str(topic), read_priority=ReadPriority.OFFLOADED_ONLY)
    assert policies.effective(topic).read_priority is ReadPriority.OFFLOADED_ONLY
    assert policies.effective(topic).deletion_lag_ms == 5
    assert policies.effective(other).read_priority is ReadPriority.BOOKKEEPER_FIRST
    assert policies.effective(TopicName.parse("acme/dev/x")).read_priority is ReadPriority.OFFLOADED_FIRST
    policies.update("topic", str(topic), read_priority=None)
    assert policies.effective(topic).read_priority is ReadPriority.BOOKKEEPER_FIRST


@pytest.mark.parametrize(
    ("set_as", "read_as"),
    [("persistent://acme/prod/orders", "acme/prod/orders"), ("acme/prod/orders", "persistent://acme/prod/orders")],
)
def test_a_topic_policy_is_one_record_whichever_way_the_topic_is_spelled(
    tmp_path: Path, set_as: str, read_as: str
) -> None:
    policies = PolicyStore(SqliteMetadataStore(tmp_path / "m.db"), DEFAULT_POLICIES)
    policies.update("topic", set_as, deletion_lag_ms=7)
    assert policies.get("topic", read_as).deletion_lag_ms == 7
    assert policies.effective(TopicName.parse(read_as)).deletion_lag_ms == 7
    assert policies.sources("topic", read_as)["deletion_lag_ms"] == (7, "topic")
    policies.update("topic", read_as, deletion_lag_ms=None)
    assert policies.get("topic", set_as) == OffloadPolicies()


def test_a_topic_named_before_names_were_ascii_still_has_effective_policies(tmp_path: Path) -> None:
    # Broker.topics() builds TopicName from a data directory's records, which may predate the ASCII rule.
    policies = PolicyStore(SqliteMetadataStore(tmp_path / "m.db"), DEFAULT_POLICIES)
    policies.update("namespace", "acme/prod", deletion_lag_ms=7)
    assert policies.effective(TopicName("acme", "prod", "café")).deletion_lag_ms == 7


def test_a_policy_for_a_malformed_name_is_refused(tmp_path: Path) -> None:
    policies = PolicyStore(SqliteMetadataStore(tmp_path / "m.db"), DEFAULT_POLICIES)
    with pytest.raises(ConfigError, match="is not tenant/namespace/topic"):
        policies.update("topic", "acme/orders", deletion_lag_ms=7)
    with pytest.raises(ConfigError, match="is not tenant/namespace,"):
        policies.update("namespace", "acme/prod/orders", deletion_lag_ms=7)


def test_invalid_policy_update_is_refused(tmp_path: Path) -> None:
    base = OffloadPolicies(retention_size_mb=1).over(DEFAULT_POLICIES)
    policies = PolicyStore(SqliteMetadataStore(tmp_path / "m.db"), base)
    with pytest.raises(ConfigError, match="below the retention size"):
        policies.update("namespace", "a/b", offload_threshold_bytes=5 << 20)
    assert policies.get("namespace", "a/b") == OffloadPolicies()


def test_policy_updates_from_two_writers_conflict(tmp_path: Path) -> None:
    first = SqliteMetadataStore(tmp_path / "m.db")
    second = SqliteMetadataStore(tmp_path / "m.db")
    PolicyStore(first, DEFAULT_POLICIES).update("namespace", "a/b", deletion_lag_ms=1)
    stale = first.get("policies/namespace/a/b")
    assert stale is not None
    PolicyStore(second, DEFAULT_POLICIES).update("namespace", "a/b", deletion_lag_ms=2)
    with pytest.raises(ConflictError):
        first.set("policies/namespace/a/b", OffloadPolicies(deletion_lag_ms=3).to_json(), stale.version)
    assert PolicyStore(first, DEFAULT_POLICIES).get("namespace", "a/b").deletion_lag_ms == 2


@pytest.mark.parametrize(
    "bad",
    [
        "a/b",
        "a/b/c/d",
        "a//c",
        "a/../c",
        "a/b c/d",
        "persistent://a/b",
        "a/b/\uff43",  # fullwidth c: a look-alike of a/b/c
        "a/b/caf\u00e9",
        "a/b/\u0663",  # Arabic-Indic digit three, which str.isalnum() admits
        "a/b/c\u200b",  # zero-width space
    ],
)
def test_bad_topic_names(bad: str) -> None:
    with pytest.raises(ConfigError, match="tenant/namespace/topic, each part of ASCII"):
        TopicName.parse(bad)


def test_over_long_names_are_one_line_config_errors() -> None:
    with pytest.raises(ConfigError, match="5004 characters; the limit is 200"):
        TopicName.parse("a/b/" + "x" * 5000)
    with pytest.raises(ConfigError, match="the limit is 200"):
        parse_namespace("a/" + "n" * 199)
    assert str(TopicName.parse("a/b/" + "x" * 196)) == "a/b/" + "x" * 196


def test_lookalike_namespaces_are_refused() -> None:
    with pytest.raises(ConfigError, match="ASCII"):
        parse_namespace("\uff41/b")


def test_topic_names() -> None:
    topic = TopicName.parse("persistent://acme/prod/orders-v2")
    assert (str(topic), topic.namespace, topic.managed_ledger_name) == (
        "acme/prod/orders-v2",
        "acme/prod",
        "acme/prod/persistent/orders-v2",
    )


def test_legacy_s3_keys() -> None:
    config = parse_config(
        {
            "s3ManagedLedgerOffloadBucket": "old",
            "s3ManagedLedgerOffloadRegion": "us-west-2",
            "s3ManagedLedgerOffloadServiceEndpoint": "http://127.0.0.1:9000",
        }
    )
    assert (config.policies.bucket, config.policies.region, config.policies.endpoint) == (
        "old",
        "us-west-2",
        "http://127.0.0.1:9000",
    )


def test_effective_policies_are_cached_until_any_writer_changes_them(tmp_path: Path) -> None:
    first = SqliteMetadataStore(tmp_path / "metadata.db")
    policies = PolicyStore(first, DEFAULT_POLICIES)
    topic = TopicName.parse("a/b/c")
    reads: list[str] = []
    real_get = first.get

    def counting_get(path: str):  # type: ignore[no-untyped-def]
        reads.append(path)
        return real_get(path)

    first.get = counting_get  # type: ignore[method-assign]
    assert policies.effective(topic).deletion_lag_ms == DEFAULT_POLICIES.deletion_lag_ms
    before = len(reads)
    policies.effective(topic)
    assert len(reads) == before  # served from the cache: no record read
    other = PolicyStore(SqliteMetadataStore(tmp_path / "metadata.db"), DEFAULT_POLICIES)
    other.update("namespace", "a/b", deletion_lag_ms=5)  # another connection, as another process would
    assert policies.effective(topic).deletion_lag_ms == 5
    policies.update("topic", "a/b/c", deletion_lag_ms=7)  # this one
    assert policies.effective(topic).deletion_lag_ms == 7
