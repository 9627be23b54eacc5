"""`offload kafka copy --layout aiven` run as a user would, configured by a
broker's properties file: the plugin's objects for the Kafka-written
segment the plugin tiered, re-runs, a killed run's leftovers, topic ids
and bad configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from offload_core.cli.aiven_copy import aiven_copy_target
from offload_core.errors import ConfigError
from offload_core.plugins import open_driver
from offload_core.rsm.aiven.custom_metadata import CustomMetadataField
from offload_core.rsm.aiven.keys import COPIER_LEASES, parse_key
from offload_core.rsm.aiven.segment_reader import AivenSegmentReader
from tests.aiven_vectors import AIVEN, AivenRun, aiven_runs, private_keys
from tests.kafka_vectors import kafka_cases
from tests.rsm.aiven.test_segment_writer import INPUTS
from tests.rsm.segments import fixture_partition
from tests.test_cli_kafka import offload

RUNS = aiven_runs()
TOPIC_ID = RUNS[0].spec["remote_log_segment_metadata"]["topicId"]
CASE = next(case for case in kafka_cases() if case.name == "a-uncompressed")
# Given by the broker at copy time, so ours differ from the plugin run's.
PER_COPY = ("id", "eventTimestampMs", "brokerId")
FILESYSTEM = "io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage"


def broker_properties(run: AivenRun, path: Path, **extra: str) -> Path:
    """A broker's properties for ``run``'s plugin settings, storing with the
    filesystem backend in the ``store`` directory beside ``path``."""
    lines = ["broker.id=1", "# the plugin's settings", "remote.log.storage.system.enable=true",
             f"rsm.config.storage.backend.class={FILESYSTEM}",
             f"rsm.config.storage.root={path.parent / 'store'}"]  # fmt: skip
    for key, value in run.spec["rsm_config"].items():
        if key.endswith(".key.file"):
            value = str(AIVEN / value)
        lines.append(f"rsm.config.{key}={str(value).lower() if isinstance(value, bool) else value}")
    lines += [f"{key}={value}" for key, value in extra.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def store_objects(url: str) -> dict[str, bytes]:
    """The store's objects but our copiers' leases (each run takes and gives back one)."""
    with open_driver(url) as driver:
        return {info.key: driver.read(info.key) for info in driver.list("") if not info.key.startswith(COPIER_LEASES)}


def without_per_copy_fields(value: object) -> object:
    if isinstance(value, dict):
        return {k: without_per_copy_fields(v) for k, v in value.items() if k not in PER_COPY}
    return value


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_copy_writes_what_the_plugin_wrote(tmp_path: Path, run: AivenRun) -> None:
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    url = f"file://{tmp_path / 'store'}"
    config = broker_properties(run, tmp_path / "server.properties")
    copied = offload("copy", str(directory), url, "--all", "--layout", "aiven", "--config", str(config))
    assert copied.returncode == 0, copied.stderr
    assert "copied 1 segment(s) in Aiven's layout" in copied.stdout
    objects = store_objects(url)
    keys = {parse_key(key).suffix: key for key in objects}  # type: ignore[union-attr]
    assert sorted(keys) == ["indexes", "log", "rsm-manifest"]
    ours = json.loads(objects[keys["rsm-manifest"]])
    plugins = json.loads(run.object_bytes("rsm-manifest"))
    if "encryption" in plugins:
        assert ours.pop("encryption").keys() == plugins.pop("encryption").keys()
    else:
        assert objects[keys["log"]] == run.object_bytes("log")
        assert objects[keys["indexes"]] == run.object_bytes("indexes")
    assert without_per_copy_fields(ours) == without_per_copy_fields(plugins)
    assert list(ours) == list(plugins)
    segment = parse_key(keys["rsm-manifest"])
    assert segment is not None
    reader = AivenSegmentReader(lambda k, s, e: objects[k][s:e], segment, objects[segment.key], private_keys())
    assert reader.read_log() == run.input_bytes("log")
    assert all(reader.read_index(kind) == run.input_bytes(name) for kind, name in INPUTS.items())


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_the_store_comes_from_the_config_when_the_url_is_omitted(tmp_path: Path, run: AivenRun) -> None:
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    config = str(broker_properties(run, tmp_path / "server.properties"))
    (tmp_path / "store").mkdir()  # the plugin's filesystem backend writes under an existing root, as we do
    copied = offload("copy", str(directory), "--all", "--layout", "aiven", "--config", config)
    assert copied.returncode == 0, copied.stderr
    listed = offload("ls", "--layout", "aiven", "--config", config, "--json")
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["topic"], row["partition"], row["start_offset"]) == ("oracle-a", 0, 0)
    read = offload("read", "--layout", "aiven", "--config", config, "oracle-a-0", "--offset", "0", "--json")
    assert read.returncode == 0, read.stderr
    assert [json.loads(line)["offset"] for line in read.stdout.splitlines()][:3] == [0, 1, 2]


def test_a_rerun_copies_nothing_again(tmp_path: Path) -> None:
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    url = f"file://{tmp_path / 'store'}"
    args = ("copy", str(directory), url, "--all", "--layout", "aiven", "--config")
    config = str(broker_properties(RUNS[1], tmp_path / "server.properties"))
    assert offload(*args, config).returncode == 0
    before = store_objects(url)
    again = offload(*args, config)
    assert again.returncode == 0 and "copied 0 segment(s) in Aiven's layout, 1 already there" in again.stdout
    assert store_objects(url) == before


def test_a_rerun_after_a_killed_copy_commits_a_whole_new_copy(tmp_path: Path) -> None:
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    store = tmp_path / "store"
    killed = RUNS[0]  # a copy killed before its manifest: its data, no manifest
    for suffix in ("log", "indexes"):
        (store / killed.object_key(suffix)).parent.mkdir(parents=True, exist_ok=True)
        (store / killed.object_key(suffix)).write_bytes(killed.object_bytes(suffix)[:100])
    config = broker_properties(killed, tmp_path / "server.properties")
    rerun = offload("copy", str(directory), f"file://{store}", "--all", "--layout", "aiven", "--config", str(config))
    assert rerun.returncode == 0 and "copied 1 segment(s)" in rerun.stdout
    objects = store_objects(f"file://{store}")
    manifests = [parse_key(key) for key in objects if key.endswith(".rsm-manifest")]
    assert len(manifests) == 1 and manifests[0] is not None
    assert objects[manifests[0].with_suffix("log").key] == killed.object_bytes("log")
    assert len(objects) == 5  # the leftovers stay: no reader serves data without a manifest


def test_topic_id_from_the_option_else_partition_metadata_else_an_error(tmp_path: Path) -> None:
    config = str(broker_properties(RUNS[0], tmp_path / "server.properties"))
    bare = fixture_partition(CASE, tmp_path / "bare", topic_id=None)
    url = f"file://{tmp_path / 'store'}"
    refused = offload("copy", str(bare), url, "--all", "--layout", "aiven", "--config", config)
    assert refused.returncode == 1 and "partition.metadata" in refused.stderr and "--topic-id" in refused.stderr
    other = "AAAAAAAAAAAAAAAAAAAAAQ"
    given = offload("copy", str(bare), url, "--all", "--layout", "aiven", "--config", config, "--topic-id", other)
    assert given.returncode == 0, given.stderr
    assert {parse_key(key).topic_id for key in store_objects(url)} == {other}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("args", "message"),
    [(("--layout", "aiven"), "--config FILE"), (("--config", "CONFIG"), "--config is for --layout aiven"),
     (("--layout", "aiven", "--config", "CONFIG", "--prefix", "p/"), "--prefix"),
     (("--layout", "aiven", "--config", "CONFIG", "--metadata", "m.db"), "--metadata")],
)  # fmt: skip
def test_option_mistakes_are_usage_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    config = str(broker_properties(RUNS[0], tmp_path / "server.properties"))
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    done = offload("copy", str(directory), f"file://{tmp_path / 'store'}",
                   *(config if arg == "CONFIG" else arg for arg in args))  # fmt: skip
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "store").exists()


def test_properties_are_read_as_java_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "! comment\n  # another\nremote.log.storage.manager.impl.prefix = tiered.\n"
        "tiered.chunk.size : 4096\ntiered.compression.enabled   TRUE\n"
        "tiered.key.prefix=a\\\n    /b\\u00e9/\ntiered.custom.metadata.fields.include=REMOTE_SIZE,\\\n OBJECT_KEY\n"
        "rsm.config.chunk.size=1\n"
        f"tiered.storage.backend.class={FILESYSTEM}\ntiered.storage.root=/srv/tiered\n"
    )
    target = aiven_copy_target(path, None, ())
    settings = target.settings
    assert (target.url, target.driver_options) == ("file:///srv/tiered", {"create": False})
    assert (settings.chunk_size, settings.compression, settings.key_prefix, settings.encryption) == (
        4096, True, "a/b\u00e9/", None)  # fmt: skip
    assert settings.custom_metadata_fields == (CustomMetadataField.REMOTE_SIZE, CustomMetadataField.OBJECT_KEY)


@pytest.mark.parametrize(
    ("lines", "message"),
    [("", "rsm.config.chunk.size is not set"), ("rsm.config.chunk.size=big", "not an integer"),
     ("rsm.config.chunk.size=0", "chunk.size is 0"), ("rsm.config.chunk.size=1\nrsm.config.compression.enabled=yes",
                                                      "compression.enabled is 'yes'"),
     ("rsm.config.chunk.size=1\nrsm.config.encryption.enabled=true", "encryption.key.pair.id is missing"),
     ("rsm.config.chunk.size=1\nrsm.config.encryption.enabled=true\nrsm.config.encryption.key.pair.id=k\n"
      "rsm.config.encryption.key.pairs=k", "encryption.key.pairs.k.public.key.file is missing"),
     ("rsm.config.chunk.size=1\nrsm.config.encryption.enabled=true\nrsm.config.encryption.key.pair.id=k\n"
      "rsm.config.encryption.key.pairs=k\nrsm.config.encryption.key.pairs.k.public.key.file=/nowhere.pem\n"
      f"rsm.config.encryption.key.pairs.k.private.key.file={AIVEN / 'keys/oracle-key-1.private.pem'}",
      "public.key.file: cannot read '/nowhere.pem'"),
     ("rsm.config.chunk.size=1\nrsm.config.segment.format=iceberg", "only 'kafka'"),
     ("rsm.config.chunk.size=1\nrsm.config.storage.backend.class=com.example.TapeStorage", "TapeStorage"),
     ("rsm.config.chunk.size=1\nrsm.config.storage.backend.class=", "storage.backend.class is missing")],
)  # fmt: skip
def test_bad_settings_name_the_file_and_key(tmp_path: Path, lines: str, message: str) -> None:
    path = tmp_path / "server.properties"
    path.write_text(f"rsm.config.storage.backend.class={FILESYSTEM}\nrsm.config.storage.root=/srv\n{lines}\n")
    with pytest.raises(ConfigError, match=f"{path}.*{message}"):
        aiven_copy_target(path, None, ())


def test_a_bad_public_key_fails_before_anything_is_written(tmp_path: Path) -> None:
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    (tmp_path / "bad.pem").write_text("not a key")
    config = broker_properties(RUNS[2], tmp_path / "server.properties")
    public = str(AIVEN / "keys/oracle-key-1.public.pem")
    config.write_text(config.read_text().replace(public, str(tmp_path / "bad.pem")))
    url = f"file://{tmp_path / 'store'}"
    done = offload("copy", str(directory), url, "--all", "--layout", "aiven", "--config", str(config))
    assert done.returncode == 1 and f"{config}: public key of key pair 'oracle-key-1' is not" in done.stderr
    assert not (tmp_path / "store").exists()


def test_our_layout_still_needs_the_url(tmp_path: Path) -> None:
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    refused = offload("copy", str(directory), "--all")
    assert refused.returncode == 2 and "give the store's URL" in refused.stderr
