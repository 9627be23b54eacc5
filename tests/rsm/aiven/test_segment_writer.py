"""Writing a segment as Aiven's plugin does, against the objects the plugin
wrote from the same Kafka segment: `.log`, `.indexes` and custom metadata
byte for byte, the manifest field for field (byte for byte unencrypted)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest
from Cryptodome.PublicKey import RSA

from offload_core.errors import ConfigError, StateError
from offload_core.rsm.aiven.chunk_index import chunks
from offload_core.rsm.aiven.chunk_transforms import IV_SIZE, ChunkTransform, unwrap_data_key, wrap_data_key
from offload_core.rsm.aiven.custom_metadata import CustomMetadataField, encode_custom_metadata
from offload_core.rsm.aiven.manifest import IndexKind, decode_manifest, encode_manifest
from offload_core.rsm.aiven.segment_writer import (
    AivenWriteSettings,
    EncryptionKeyPair,
    LogEncoder,
    encode_indexes,
    main_path,
    segment_key,
    segment_manifest,
    segment_transform,
)
from offload_core.rsm.types import RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition, TopicPartition
from tests.aiven_vectors import AIVEN, PRIVATE_KEY_PAIR, AivenRun, aiven_runs, private_keys

RUNS = aiven_runs()
ENCRYPTED = RUNS[2]
PUBLIC_PEM = (AIVEN / "keys" / f"{PRIVATE_KEY_PAIR}.public.pem").read_bytes()
INPUTS = {IndexKind.OFFSET: "offset_index", IndexKind.TIMESTAMP: "time_index",
          IndexKind.PRODUCER_SNAPSHOT: "producer_snapshot", IndexKind.LEADER_EPOCH: "leader_epoch_index"}  # fmt: skip


def metadata_of(run: AivenRun) -> RemoteLogSegmentMetadata:
    spec = run.spec["remote_log_segment_metadata"]
    tp = TopicIdPartition(spec["topicId"], TopicPartition(spec["topic"], spec["partition"]))
    return RemoteLogSegmentMetadata(
        RemoteLogSegmentId(tp, spec["segmentId"]), spec["startOffset"], spec["endOffset"], spec["maxTimestampMs"],
        spec["brokerId"], spec["eventTimestampMs"], spec["segmentSizeInBytes"],
        {int(epoch): offset for epoch, offset in spec["segmentLeaderEpochs"].items()},
    )  # fmt: skip


def plugins_randomness(run: AivenRun) -> Callable[[int], bytes]:
    """The data key, AAD and IVs the plugin drew for ``run``, in the order
    our writer draws them (the IVs read back from its objects)."""
    drawn: list[bytes] = []
    secrets = run.spec.get("encryption_secrets")
    if secrets is not None:
        drawn += [bytes.fromhex(secrets["dataKeyHex"]), bytes.fromhex(secrets["aadHex"])]
        manifest = decode_manifest(run.object_bytes("rsm-manifest"), "m")
        log, indexes = run.object_bytes("log"), run.object_bytes("indexes")
        drawn += [log[c.stored_start : c.stored_start + IV_SIZE] for c in chunks(manifest.chunk_index, "log")]
        drawn += [indexes[p.position : p.position + IV_SIZE] for p in manifest.indexes.values() if p and p.size]

    def random_bytes(size: int) -> bytes:
        value = drawn.pop(0)
        assert len(value) == size
        return value

    return random_bytes


def settings_of(run: AivenRun) -> AivenWriteSettings:
    config = run.spec["rsm_config"]
    pair = EncryptionKeyPair(PRIVATE_KEY_PAIR, PUBLIC_PEM) if config["encryption.enabled"] else None
    fields = CustomMetadataField.parse(config["custom.metadata.fields.include"])
    return AivenWriteSettings(config["chunk.size"], config["compression.enabled"], encryption=pair,
                              key_prefix=config["key.prefix"], custom_metadata_fields=fields)  # fmt: skip


def write(run: AivenRun, piece: int) -> tuple[bytes, bytes, bytes]:
    settings, random_bytes = settings_of(run), plugins_randomness(run)
    transform = segment_transform(settings.compression, settings.encryption is not None, random_bytes)
    encoder = LogEncoder(transform, settings.chunk_size, random_bytes)
    original = run.input_bytes("log")
    log = b"".join(b"".join(encoder.feed(original[i : i + piece])) for i in range(0, len(original), piece))
    log += encoder.finish()
    inputs = {kind: run.input_bytes(name) for kind, name in INPUTS.items()} | {IndexKind.TRANSACTION: None}
    indexes, places = encode_indexes(inputs, transform, random_bytes)
    manifest = segment_manifest(metadata_of(run), encoder.chunk_index, places, transform, settings.encryption)
    return log, indexes, encode_manifest(manifest)


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
@pytest.mark.parametrize("piece", [1000, 4096, 1 << 20])
def test_log_and_indexes_are_the_plugins_byte_for_byte(run: AivenRun, piece: int) -> None:
    log, indexes, _ = write(run, piece)
    assert log == run.object_bytes("log")
    assert indexes == run.object_bytes("indexes")


@pytest.mark.parametrize("run", RUNS[:2], ids=lambda run: run.name)
def test_unencrypted_manifest_is_the_plugins_byte_for_byte(run: AivenRun) -> None:
    assert write(run, 1 << 20)[2] == run.object_bytes("rsm-manifest")


def test_encrypted_manifest_differs_only_in_the_freshly_wrapped_data_key() -> None:
    ours = json.loads(write(ENCRYPTED, 1 << 20)[2])
    plugins = json.loads(ENCRYPTED.object_bytes("rsm-manifest"))
    pair, _, wrapped = ours["encryption"].pop("dataKey").partition(":")
    assert plugins["encryption"].pop("dataKey").startswith(f"{PRIVATE_KEY_PAIR}:")
    assert ours == plugins
    assert list(ours) == list(plugins)
    data_key = unwrap_data_key(base64.b64decode(wrapped), private_keys()[pair], key_pair_id=pair, key="ours")
    assert data_key == bytes.fromhex(ENCRYPTED.spec["encryption_secrets"]["dataKeyHex"])


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_custom_metadata_is_the_plugins(run: AivenRun) -> None:
    settings = settings_of(run)
    key = segment_key(settings.key_prefix, metadata_of(run), "log")
    remote_size = sum(run.spec["outputs"][suffix]["size"] for suffix in ("log", "indexes", "rsm-manifest"))
    found = encode_custom_metadata(settings.custom_metadata_fields, remote_size=remote_size, prefix=key.prefix,
                                   object_key=main_path(key))  # fmt: skip
    assert found == base64.b64decode(run.spec["returned_custom_metadata_base64"])
    assert key.key == run.object_key("log")


def test_no_custom_metadata_fields_return_none_as_the_plugin() -> None:
    assert encode_custom_metadata((), remote_size=1, prefix="", object_key="k") is None


def test_unknown_custom_metadata_field_names_it() -> None:
    with pytest.raises(ConfigError, match="'SIZE'"):
        CustomMetadataField.parse("REMOTE_SIZE, SIZE")


@pytest.mark.parametrize("transform", [ChunkTransform(True), ChunkTransform(False, b"k" * 32, b"a" * 32)])
def test_empty_log_with_a_transform_is_refused_as_the_plugin_cannot_index_it(transform: ChunkTransform) -> None:
    with pytest.raises(StateError, match="empty .log"):
        LogEncoder(transform, 1024).finish()


def test_empty_plain_log_gets_the_plugins_fixed_index() -> None:
    encoder = LogEncoder(ChunkTransform(False), 1024)
    assert encoder.finish() == b""
    assert chunks(encoder.chunk_index, "log") == []


def test_chunk_size_out_of_the_plugins_range_is_refused() -> None:
    with pytest.raises(ConfigError, match="chunk.size 0"):
        AivenWriteSettings(0)


def test_a_key_too_small_for_oaep_with_sha3_names_the_key_pair() -> None:
    small = RSA.generate(1024).public_key().export_key()
    with pytest.raises(ConfigError, match="'small-pair'.*1024 bits"):
        wrap_data_key(b"k" * 32, small, key_pair_id="small-pair")


def test_not_a_pem_names_the_key_pair() -> None:
    with pytest.raises(ConfigError, match="'p1'.*not an RSA public key"):
        wrap_data_key(b"k" * 32, b"nonsense", key_pair_id="p1")
