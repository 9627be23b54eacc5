"""Aiven's chunk transforms and data key against the plugin's objects."""

from __future__ import annotations

import pytest

from offload_core.errors import ConfigError, FormatError
from offload_core.rsm.aiven.chunk_index import chunks
from offload_core.rsm.aiven.chunk_transforms import (
    IV_SIZE,
    ChunkTransform,
    decode_chunk,
    encode_chunk,
    unwrap_data_key,
)
from offload_core.rsm.aiven.manifest import decode_manifest
from tests.aiven_vectors import AIVEN, PRIVATE_KEY_PAIR, AivenRun, aiven_runs, private_keys

RUNS = aiven_runs()


def transform_of(run: AivenRun) -> ChunkTransform:
    manifest = decode_manifest(run.object_bytes("rsm-manifest"), "manifest")
    if manifest.encryption is None:
        return ChunkTransform(manifest.compression)
    pem = private_keys()[manifest.encryption.key_pair_id]
    data_key = unwrap_data_key(manifest.encryption.wrapped_data_key, pem, key_pair_id=PRIVATE_KEY_PAIR, key="manifest")
    return ChunkTransform(manifest.compression, data_key, manifest.encryption.aad)


def test_data_key_unwraps_to_the_plugins() -> None:
    run = RUNS[2]
    assert transform_of(run).data_key == bytes.fromhex(run.spec["encryption_secrets"]["dataKeyHex"])


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_every_chunk_decodes_and_reencodes_byte_for_byte(run: AivenRun) -> None:
    transform, stored, log = transform_of(run), run.object_bytes("log"), run.input_bytes("log")
    for chunk in chunks(decode_manifest(run.object_bytes("rsm-manifest"), "m").chunk_index, "log"):
        original = log[chunk.original_start : chunk.original_end]
        data = stored[chunk.stored_start : chunk.stored_end]
        assert decode_chunk(data, transform, original_size=len(original), key="log", index=chunk.index) == original
        assert encode_chunk(original, transform, iv=data[:IV_SIZE]) == data


def test_compressed_chunk_of_another_size_names_the_object() -> None:
    data = encode_chunk(b"x" * 100, ChunkTransform(compression=True))
    with pytest.raises(FormatError, match="chunk 7 of 'obj.log'"):
        decode_chunk(data, ChunkTransform(compression=True), original_size=99, key="obj.log", index=7)


def test_public_key_given_as_private_names_the_key_pair() -> None:
    public = (AIVEN / "keys" / f"{PRIVATE_KEY_PAIR}.public.pem").read_bytes()
    with pytest.raises(ConfigError, match=f"{PRIVATE_KEY_PAIR}.*'obj.rsm-manifest'"):
        unwrap_data_key(b"\0" * 256, public, key_pair_id=PRIVATE_KEY_PAIR, key="obj.rsm-manifest")
