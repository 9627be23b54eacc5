"""Reading the segments Aiven's plugin tiered: the `.log` and every index
byte-identical to what Kafka wrote, and our errors for bad objects."""

from __future__ import annotations

import pytest
from Cryptodome.PublicKey import RSA

from offload_core.errors import ConfigError, FormatError
from offload_core.rsm.aiven.chunk_index import chunks
from offload_core.rsm.aiven.keys import require_key
from offload_core.rsm.aiven.manifest import IndexKind
from offload_core.rsm.aiven.segment_reader import AivenSegmentReader
from tests.aiven_vectors import AivenRun, aiven_runs, private_keys

RUNS = aiven_runs()
ENCRYPTED = RUNS[2]
INPUTS = {IndexKind.OFFSET: "offset_index", IndexKind.TIMESTAMP: "time_index",
          IndexKind.PRODUCER_SNAPSHOT: "producer_snapshot", IndexKind.LEADER_EPOCH: "leader_epoch_index"}  # fmt: skip


def open_reader(run: AivenRun, objects: dict[str, bytes] | None = None, reads: list[tuple[str, int, int]] | None = None,
                keys: dict[str, bytes] | None = None) -> AivenSegmentReader:  # fmt: skip
    stored = objects or run.objects()

    def read_range(key: str, start: int, end: int) -> bytes:
        if reads is not None:
            reads.append((key, start, end))
        return stored[key][start:end]

    segment = require_key(run.object_key("rsm-manifest"), run.prefix)
    return AivenSegmentReader(read_range, segment, stored[segment.key], private_keys() if keys is None else keys)


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_log_and_indexes_are_what_kafka_wrote(run: AivenRun) -> None:
    reader = open_reader(run)
    log = run.input_bytes("log")
    assert reader.read_log() == log
    for kind, name in INPUTS.items():
        assert reader.read_index(kind) == run.input_bytes(name)
    assert reader.read_index(IndexKind.TRANSACTION) is None


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
@pytest.mark.parametrize(
    ("start", "end"), [(0, 1), (1000, 1100), (1023, 5000), (4095, 4097), (8191, 20000), (46130, 46131), (7, 7)]
)
def test_ranges_straddling_chunks_decode_only_their_chunks_in_one_read(run: AivenRun, start: int, end: int) -> None:
    reads: list[tuple[str, int, int]] = []
    reader = open_reader(run, reads=reads)
    assert reader.read_log(start, end) == run.input_bytes("log")[start:end]
    chunk = reader.manifest.chunk_index.original_chunk_size
    assert len(reads) == (start != end)
    if reads:
        (key, first, last) = reads[0]
        stored = chunks(reader.manifest.chunk_index, "log")
        wanted = range(start // chunk, (end - 1) // chunk + 1)
        assert key == run.object_key("log")
        assert (first, last) == (stored[wanted[0]].stored_start, stored[wanted[-1]].stored_end)


def test_tampered_log_chunk_names_the_object() -> None:
    objects = ENCRYPTED.objects()
    log = bytearray(objects[ENCRYPTED.object_key("log")])
    log[chunks(open_reader(ENCRYPTED).manifest.chunk_index, "log")[2].stored_start + 20] ^= 1
    objects[ENCRYPTED.object_key("log")] = bytes(log)
    with pytest.raises(FormatError, match=r"chunk 2 of '.*\.log'.*tampered"):
        open_reader(ENCRYPTED, objects).read_log(2048, 3072)


def test_tampered_index_names_the_object() -> None:
    objects = ENCRYPTED.objects()
    indexes = bytearray(objects[ENCRYPTED.object_key("indexes")])
    indexes[-1] ^= 1
    objects[ENCRYPTED.object_key("indexes")] = bytes(indexes)
    with pytest.raises(FormatError, match=r"'.*\.indexes'.*tampered"):
        open_reader(ENCRYPTED, objects).read_index(IndexKind.LEADER_EPOCH)


def test_wrong_private_key_names_the_key_pair_and_object() -> None:
    other = RSA.generate(2048).export_key()
    with pytest.raises(ConfigError, match=r"rsm-manifest.*oracle-key-1"):
        open_reader(ENCRYPTED, keys={"oracle-key-1": other})


def test_missing_private_key_names_the_key_pair_and_object() -> None:
    with pytest.raises(ConfigError, match=r"rsm-manifest.*oracle-key-1"):
        open_reader(ENCRYPTED, keys={})


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_object_shorter_than_its_chunk_index_names_it(run: AivenRun) -> None:
    objects = run.objects()
    objects[run.object_key("log")] = objects[run.object_key("log")][:-1]
    with pytest.raises(FormatError, match=r"'.*\.log'.*shorter"):
        open_reader(run, objects).read_log()
