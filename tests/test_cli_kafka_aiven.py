"""`offload kafka ... --layout aiven`: the segment Aiven's plugin tiered in
the three shared runs reads through every verb byte for byte as Kafka
wrote it, and gives the same output as our own layout's copy of it, from
the broker's own properties file (filesystem backend, and S3 on moto)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.aiven_vectors import AivenRun, aiven_runs, run_root, server_properties
from tests.kafka_vectors import kafka_cases
from tests.rsm.aiven.stores import TOPIC_ID, put_run
from tests.rsm.segments import fixture_partition
from tests.test_cli_kafka import offload

RUNS = aiven_runs()
CASE = next(case for case in kafka_cases() if case.name == "a-uncompressed")
TP = "oracle-a-0"
INDEX_INPUTS = {"offset": "offset_index", "timestamp": "time_index", "producer-snapshot": "producer_snapshot",
                "leader-epoch": "leader_epoch_index"}  # fmt: skip
LOOKUPS = ["-1", "-2", "-3", *(str(lookup["target_timestamp"]) for lookup in CASE.spec["timestamp_lookups"][:8])]


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What our layout's verbs print for the same Kafka segment, copied with our `kafka copy`."""
    root = tmp_path_factory.mktemp("ours")
    url = f"file://{root / 'store'}"
    copied = offload("copy", str(fixture_partition(CASE, root, TOPIC_ID)), url, "--all")
    assert copied.returncode == 0, copied.stderr
    printed = {
        "read": offload("read", url, TP, "--offset", "0", "--json").stdout,
        "read-30": offload("read", url, TP, "--offset", "30", "--max-bytes", "1", "--json").stdout,
        "committed": offload("read", url, TP, "--offset", "0", "--isolation", "read_committed").stdout,
    }
    for timestamp in LOOKUPS:
        printed[f"offsets {timestamp}"] = offload("offsets", url, TP, "--timestamp", timestamp).stdout
    return printed


def _same_as_ours(ours: dict[str, str], *store: str) -> None:
    assert offload("read", *store, TP, "--offset", "0", "--json").stdout == ours["read"]
    assert offload("read", *store, TP, "--offset", "30", "--max-bytes", "1", "--json").stdout == ours["read-30"]
    assert offload("read", *store, TP, "--offset", "0", "--isolation", "read_committed").stdout == ours["committed"]
    for timestamp in LOOKUPS:
        assert offload("offsets", *store, TP, "--timestamp", timestamp).stdout == ours[f"offsets {timestamp}"]


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_every_verb_reads_the_plugins_segment_from_the_brokers_properties(
    tmp_path: Path, run: AivenRun, ours: dict[str, str]
) -> None:
    config = str(server_properties(tmp_path / "server.properties", run))
    store = ("--layout", "aiven", "--config", config)
    _same_as_ours(ours, *store)
    for kind, input_kind in INDEX_INPUTS.items():
        fetched = offload("fetch-index", *store, TP, "0", "--type", kind, binary=True)
        assert fetched.returncode == 0, fetched.stderr
        assert fetched.stdout == run.input_bytes(input_kind)
    missing = offload("fetch-index", *store, TP, "0", "--type", "transaction")
    assert missing.returncode == 1 and "no TRANSACTION index" in missing.stderr
    [row] = [json.loads(line) for line in offload("ls", *store, "--json").stdout.splitlines()]
    assert {k: row[k] for k in ("topic", "topic_id", "partition", "start_offset", "end_offset", "segment_id",
                                "size", "state")} == {
        "topic": "oracle-a", "topic_id": TOPIC_ID, "partition": 0, "start_offset": 0, "end_offset": 51,
        "segment_id": "XpoAAAAAQACAAAAAAAAAAQ", "size": run.spec["inputs"]["log"]["size"],
        "state": "COPY_SEGMENT_FINISHED"}  # fmt: skip
    assert offload("ls", *store, TP, "--json").stdout == offload("ls", *store, "--json").stdout


@pytest.mark.parametrize("run", RUNS[:2], ids=lambda run: run.name)
def test_an_unencrypted_run_reads_from_a_url_without_config(run: AivenRun, ours: dict[str, str]) -> None:
    _same_as_ours(ours, "--layout", "aiven", f"file://{run_root(run)}")


def test_an_encrypted_run_without_its_key_is_one_line_naming_the_pair(tmp_path: Path) -> None:
    failed = offload("read", "--layout", "aiven", f"file://{run_root(RUNS[2])}", TP, "--offset", "0")
    assert failed.returncode == 1
    assert "oracle-key-1" in failed.stderr and ".rsm-manifest" in failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1 and "Traceback" not in failed.stderr


def test_a_recreated_topic_needs_topic_id_and_the_error_names_both(tmp_path: Path, ours: dict[str, str]) -> None:
    from offload_core.plugins import open_driver

    root = tmp_path / "store"
    with open_driver(f"file://{root}") as driver:
        put_run(driver, RUNS[0], prefix="tiered/")
        put_run(driver, RUNS[0], prefix="tiered/", topic_id="RecreatedTopicIdAAAAAA")
    store = ("--layout", "aiven", f"file://{root}", "--prefix", "tiered/")
    failed = offload("read", *store, TP, "--offset", "0")
    assert failed.returncode == 1 and len(failed.stderr.strip().splitlines()) == 1
    assert TOPIC_ID in failed.stderr and "RecreatedTopicIdAAAAAA" in failed.stderr and "--topic-id" in failed.stderr
    assert len(offload("ls", *store, "--json").stdout.splitlines()) == 2
    assert offload("read", *store, TP, "--offset", "0", "--json", "--topic-id", TOPIC_ID).stdout == ours["read"]


def test_cleanup_is_a_dry_run_unless_execute(tmp_path: Path) -> None:
    from offload_core.plugins import open_driver

    root = tmp_path / "store"
    with open_driver(f"file://{root}") as driver:
        put_run(driver, RUNS[1])
        put_run(driver, RUNS[1], segment_id="RetriedCopyAAAAAAAAAAA", event_ms=1700000200000)
    store = ("--layout", "aiven", f"file://{root}")
    dry = offload("cleanup", *store, TP, "--until", "1700000000000")
    assert dry.returncode == 0 and json.loads(dry.stdout)["dry_run"] is True
    assert json.loads(dry.stdout)["segments"] == 0  # nothing is that old
    dry = offload("cleanup", *store, TP, "--until", "2030-01-01T00:00:00Z")
    assert json.loads(dry.stdout) == {"dry_run": True, "segments": 2, "bytes": 2 * 46131, "deleted_segments": 0,
                                      "log_start_offset": 52}  # fmt: skip
    assert "dry run" in dry.stderr and len(list(root.rglob("*.log"))) == 2
    done = offload("cleanup", *store, TP, "--until", "2030-01-01T00:00:00Z", "--execute")
    assert json.loads(done.stdout)["deleted_segments"] == 2
    assert offload("ls", *store, "--json").stdout == ""


@pytest.mark.emulator
def test_an_encrypted_run_reads_from_s3_configured_by_the_brokers_properties(
    tmp_path: Path, s3: object, ours: dict[str, str]
) -> None:
    from offload_core.plugins import open_driver

    options = s3.client_options()  # type: ignore[attr-defined]
    with open_driver("s3://offload-test", **options) as driver:
        put_run(driver, RUNS[2], prefix="tiered/")
    storage = {
        "backend.class": "io.aiven.kafka.tieredstorage.storage.s3.S3Storage",
        "s3.bucket.name": "offload-test",
        "s3.region": options["region"],
        "s3.endpoint.url": options["endpoint"],
        "s3.path.style.access.enabled": "true",
        "aws.access.key.id": options["access_key_id"],
        "aws.secret.access.key": options["secret_access_key"],
    }
    config = server_properties(tmp_path / "server.properties", RUNS[2], storage)
    with config.open("a") as properties:
        properties.write("rsm.config.key.prefix=tiered/\n")
    store = ("--layout", "aiven", "--config", str(config))
    _same_as_ours(ours, *store)
    fetched = offload("fetch-index", *store, TP, "0", "--type", "offset", binary=True)
    assert fetched.stdout == RUNS[2].input_bytes("offset_index")


def test_our_layout_reads_from_a_brokers_properties_too(tmp_path: Path, ours: dict[str, str]) -> None:
    root = tmp_path / "ours"
    url = f"file://{root / 'store'}"
    assert offload("copy", str(fixture_partition(CASE, root, TOPIC_ID)), url, "--all", "--prefix", "k/").returncode == 0
    config = tmp_path / "server.properties"
    config.write_text(f"broker.id=1\nrsm.config.storage.url={url}\nrsm.config.key.prefix=k/\n")
    assert offload("read", "--config", str(config), TP, "--offset", "0", "--json").stdout == ours["read"]
