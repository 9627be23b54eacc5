"""Hadoop-written MapFiles (tests/vectors/pulsar-fs): our encoder writes
them byte for byte from the same entries and sync markers, and our
decoders read every entry back."""

from __future__ import annotations

import hashlib

import pytest

from offload_core.formats.hadoop_crc import CrcWriter, check_crc_file
from offload_core.formats.mapfile import MapFileEncoder, decode_data, decode_index
from offload_core.formats.sequence_file import Compression
from tests.pulsar_fs_vectors import FsVector, load_fs_vectors

VECTORS = load_fs_vectors()


def _encode(vector: FsVector) -> tuple[bytes, bytes]:
    encoder = MapFileEncoder(compression=Compression.BLOCK, data_sync=vector.data_sync, index_sync=vector.index_sync)
    parts = [encoder.data_header_bytes, encoder.append(-1, vector.metadata)]
    parts += [encoder.append(entry_id, entry) for entry_id, entry in enumerate(vector.entries)]
    tail, index = encoder.finish()
    return b"".join([*parts, tail]), index


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_vector_files_are_what_the_manifest_says(vector: FsVector) -> None:
    for relative, facts in vector.spec["files"].items():
        data = (vector.root / relative).read_bytes()
        assert len(data) == facts["bytes"]
        assert hashlib.sha256(data).hexdigest() == facts["sha256"]
    for spec, entry in zip(vector.spec["entries"], vector.entries, strict=True):
        assert hashlib.sha256(entry).hexdigest() == spec["sha256"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_our_encoder_writes_hadoops_bytes(vector: FsVector) -> None:
    data, index = _encode(vector)
    assert data == vector.file("data")
    assert index == vector.file("index")
    for name, content in (("data", data), ("index", index)):
        crc = CrcWriter()
        for start in range(0, len(content), 100):
            crc.update(content[start : start + 100])
        assert crc.finish() == vector.file(f".{name}.crc")


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.name)
def test_we_read_hadoops_files_entry_for_entry(vector: FsVector) -> None:
    entries = decode_data(vector.file("data"), "data")
    assert entries == [(-1, vector.metadata), *enumerate(vector.entries)]
    index = decode_index(vector.file("index"), "index")
    expected = vector.spec["expected_index_entries(hadoop SequenceFile.Reader)"]
    assert [list(pair) for pair in zip(index.keys, index.offsets, strict=True)] == expected
    for name in ("data", "index"):
        check_crc_file(vector.file(f".{name}.crc"), vector.file(name), name)
