"""Aiven's keys, manifest and chunk indexes, byte for byte against the
objects the plugin wrote."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import FormatError
from offload_core.rsm.aiven.chunk_index import (
    FixedChunkIndex,
    VariableChunkIndex,
    chunk_count,
    chunks,
    decode_chunk_sizes,
    encode_chunk_sizes,
    stored_size,
)
from offload_core.rsm.aiven.keys import parse_key, require_key
from offload_core.rsm.aiven.manifest import decode_manifest, encode_manifest
from tests.aiven_vectors import AivenRun, aiven_runs

RUNS = aiven_runs()
KEY = "t-ChssPU5fSmuMna4PGis8TQ/0/00000000000000000000-XpoAAAAAQACAAAAAAAAAAQ.rsm-manifest"


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_manifest_reencodes_byte_for_byte(run: AivenRun) -> None:
    data = run.object_bytes("rsm-manifest")
    manifest = decode_manifest(data, run.object_key("rsm-manifest"))
    assert encode_manifest(manifest) == data
    assert stored_size(manifest.chunk_index, "log") == len(run.object_bytes("log"))
    assert [c.original_end for c in chunks(manifest.chunk_index, "log")][-1] == len(run.input_bytes("log"))


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_vector_keys_round_trip(run: AivenRun) -> None:
    metadata = run.spec["remote_log_segment_metadata"]
    for suffix in ("log", "indexes", "rsm-manifest"):
        parsed = require_key(run.object_key(suffix), run.prefix)
        fields = (parsed.topic, parsed.topic_id, parsed.partition, parsed.start_offset, parsed.segment_id)
        assert fields == tuple(metadata[name] for name in ("topic", "topicId", "partition", "startOffset", "segmentId"))
        assert parsed.suffix == suffix
        assert parsed.key == run.object_key(suffix)
        prefixed = parsed.__class__(**{**parsed.__dict__, "prefix": "tiered/"})
        assert parse_key(prefixed.key, "tiered/") == prefixed


def test_topic_with_dashes_takes_the_last_22_characters_as_its_id() -> None:
    parsed = require_key("p-a-b-ChssPU5fSmuMna4PGis8TQ/12/00000000000000000345-Xpo-AAAAQACAAAAAAAAAAQ.log", "p-")
    assert (parsed.topic, parsed.topic_id, parsed.partition, parsed.start_offset) == (
        "a-b",
        "ChssPU5fSmuMna4PGis8TQ",
        12,
        345,
    )


@pytest.mark.parametrize("key", [
    "t-short/0/00000000000000000000-XpoAAAAAQACAAAAAAAAAAQ.log",
    "t-ChssPU5fSmuMna4PGis8TQ/0/0000000000000000000-XpoAAAAAQACAAAAAAAAAAQ.log",
    "t-ChssPU5fSmuMna4PGis8TQ/00/00000000000000000000-XpoAAAAAQACAAAAAAAAAAQ.log",
    "t-ChssPU5fSmuMna4PGis8TQ/0/00000000000000000000-XpoAAAAAQACAAAAAAAAAAQ.index",
    "other/t-ChssPU5fSmuMna4PGis8TQ/0/00000000000000000000-XpoAAAAAQACAAAAAAAAAAQ.log",
])  # fmt: skip
def test_keys_that_do_not_parse(key: str) -> None:
    assert parse_key(key) is None
    with pytest.raises(FormatError, match=key.replace(".", r"\.")):
        require_key(key)


def _edited(edit: str) -> bytes:
    fields = json.loads(RUNS[2].object_bytes("rsm-manifest"))
    if edit == "unknown top":
        fields["extra"] = 1
    elif edit == "unknown nested":
        fields["segmentIndexes"]["offset"]["crc"] = 0
    elif edit == "version":
        fields["version"] = "2"
    elif edit == "no transaction":
        del fields["segmentIndexes"]["transaction"]
    elif edit == "file size":
        fields["chunkIndex"]["originalFileSize"] += 1024
    elif edit == "not json":
        return b"{"
    return json.dumps(fields, separators=(",", ":")).encode()


@pytest.mark.parametrize(
    "edit", ["unknown top", "unknown nested", "version", "no transaction", "file size", "not json"]
)
def test_manifests_the_plugin_would_refuse_name_the_object(edit: str) -> None:
    with pytest.raises(FormatError, match="t-ChssPU5fSmuMna4PGis8TQ"):
        decode_manifest(_edited(edit), KEY)


def test_fixed_index_that_does_not_add_up() -> None:
    with pytest.raises(FormatError, match="does not add up.*'obj'|'obj'.*does not add up"):
        chunks(FixedChunkIndex(1024, 2048, 1024, 0), "obj")


@given(st.integers(1, 10_000), st.integers(0, 200_000), st.integers(1, 20_000), st.integers(1, 20_000))
def test_fixed_index_round_trips(chunk_size: int, file_size: int, transformed: int, final: int) -> None:
    index = FixedChunkIndex(chunk_size, file_size, transformed, final)
    found = chunks(index, "obj")
    assert decode_manifest(encode_manifest_with(index), "obj").chunk_index == index
    assert [c.original_start for c in found] == [i * chunk_size for i in range(len(found))]
    assert sum(c.original_end - c.original_start for c in found) == file_size
    assert all(a.stored_end == b.stored_start for a, b in zip(found, found[1:], strict=False))


@given(st.integers(1, 10_000), st.data())
def test_variable_index_round_trips(chunk_size: int, data: st.DataObject) -> None:
    file_size = data.draw(st.integers(0, 300 * chunk_size))
    sizes = tuple(data.draw(st.lists(st.integers(1, 2**31 - 1), min_size=chunk_count(chunk_size, file_size),
                                     max_size=chunk_count(chunk_size, file_size))))  # fmt: skip
    assert decode_chunk_sizes(encode_chunk_sizes(sizes), "obj") == sizes
    index = VariableChunkIndex(chunk_size, file_size, sizes)
    assert decode_manifest(encode_manifest_with(index), "obj").chunk_index == index


def encode_manifest_with(index: FixedChunkIndex | VariableChunkIndex) -> bytes:
    manifest = decode_manifest(RUNS[0].object_bytes("rsm-manifest"), "vector")
    return encode_manifest(manifest.__class__(**{**manifest.__dict__, "chunk_index": index}))


@given(st.lists(st.integers(0, 2**31 - 1), max_size=500))
def test_chunk_sizes_codec_round_trips_any_sizes(sizes: list[int]) -> None:
    assert decode_chunk_sizes(encode_chunk_sizes(tuple(sizes)), "obj") == tuple(sizes)
