"""Write then read, over chunk sizes from 1 byte, segments from 0 bytes,
compression and encryption on and off: the exact bytes and indexes come
back; a truncated or bit-flipped object gives only our errors.

Only an encrypted segment can promise never to return wrong bytes from a
flipped bit: its chunks and indexes carry AES-GCM tags. The plugin stores
an unencrypted one with no checksum of its own (zstd frames without one,
plain bytes as they are), so there a flip can only be caught by Kafka's
batch CRCs when the records are read; here it must still never raise
anything but our errors, and a truncation is always caught."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core.errors import OffloadError, StateError
from offload_core.rsm.aiven.keys import SUFFIXES, Suffix
from offload_core.rsm.aiven.manifest import IndexKind, encode_manifest
from offload_core.rsm.aiven.segment_reader import AivenSegmentReader
from offload_core.rsm.aiven.segment_writer import (
    EncryptionKeyPair,
    LogEncoder,
    encode_indexes,
    segment_key,
    segment_manifest,
    segment_transform,
)
from offload_core.rsm.types import RemoteLogSegmentId, RemoteLogSegmentMetadata, TopicIdPartition, TopicPartition
from tests.aiven_vectors import AIVEN, PRIVATE_KEY_PAIR, private_keys

KEY_PAIR = EncryptionKeyPair(PRIVATE_KEY_PAIR, (AIVEN / "keys" / f"{PRIVATE_KEY_PAIR}.public.pem").read_bytes())
PARTITION = TopicIdPartition("ChssPU5fSmuMna4PGis8TQ", TopicPartition("t.a-b", 3))


@dataclass(frozen=True)
class Segment:
    log: bytes
    indexes: dict[IndexKind, bytes | None]
    chunk_size: int
    compression: bool
    encryption: bool


@dataclass(frozen=True)
class Written:
    segment: Segment
    objects: dict[str, bytes]

    def key(self, suffix: Suffix) -> str:
        return segment_key("tiered/", metadata(len(self.segment.log)), suffix).key

    def reader(self, objects: dict[str, bytes] | None = None) -> AivenSegmentReader:
        """A reader of ``objects`` (these objects by default)."""
        stored = self.objects if objects is None else objects
        manifest_key = segment_key("tiered/", metadata(len(self.segment.log)), "rsm-manifest")
        return AivenSegmentReader(lambda key, start, end: stored[key][start:end], manifest_key,
                                  stored[manifest_key.key], private_keys())  # fmt: skip


def read_all(reader: AivenSegmentReader) -> tuple[bytes, dict[IndexKind, bytes | None]]:
    return reader.read_log(), {kind: reader.read_index(kind) for kind in IndexKind}


def metadata(size: int) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(RemoteLogSegmentId(PARTITION, "XpoAAAAAQACAAAAAAAAAAQ"), 100, 180,
                                    1_700_000_000_000, 1, 1_700_000_100_000, size, {0: 100, 3: 150})  # fmt: skip


def write(segment: Segment) -> Written:
    transform = segment_transform(segment.compression, segment.encryption)
    encoder = LogEncoder(transform, segment.chunk_size)
    pieces = [segment.log[i : i + 7] for i in range(0, len(segment.log), 7)]
    log = b"".join(b"".join(encoder.feed(piece)) for piece in pieces) + encoder.finish()
    indexes, places = encode_indexes(segment.indexes, transform)
    manifest = segment_manifest(metadata(len(segment.log)), encoder.chunk_index, places, transform,
                                KEY_PAIR if segment.encryption else None)  # fmt: skip
    keys = [segment_key("tiered/", metadata(len(segment.log)), suffix).key for suffix in SUFFIXES]
    return Written(segment, dict(zip(keys, (log, indexes, encode_manifest(manifest)), strict=True)))


logs = st.binary(max_size=1500) | st.builds(lambda piece, times: piece * times, st.binary(min_size=1, max_size=9),
                                            st.integers(1, 300))  # fmt: skip
index_bytes = st.binary(max_size=60)


@st.composite
def segments(draw: st.DrawFn, max_log: int = 1500) -> Segment:
    log = draw(logs)[:max_log]
    compression, encryption = draw(st.booleans()), draw(st.booleans())
    if not log and (compression or encryption):
        log = draw(st.binary(min_size=1, max_size=10))  # the plugin cannot store an empty .log transformed
    indexes: dict[IndexKind, bytes | None] = {kind: draw(index_bytes) for kind in IndexKind}
    indexes[IndexKind.TRANSACTION] = draw(st.none() | index_bytes)
    return Segment(log, indexes, draw(st.integers(1, 64) | st.integers(1, 4096)), compression, encryption)


@given(segments(), st.data())
def test_what_is_written_reads_back_exactly(segment: Segment, data: st.DataObject) -> None:
    reader = write(segment).reader()
    assert read_all(reader) == (segment.log, segment.indexes)
    start = data.draw(st.integers(0, len(segment.log)))
    end = data.draw(st.integers(start, len(segment.log)))
    assert reader.read_log(start, end) == segment.log[start:end]


@pytest.mark.parametrize(("compression", "encryption"), [(True, False), (False, True), (True, True)])
def test_an_empty_log_is_refused_with_a_transform(compression: bool, encryption: bool) -> None:
    with pytest.raises(StateError, match="empty .log"):
        write(Segment(b"", dict.fromkeys(IndexKind, b""), 10, compression, encryption))


def test_an_empty_plain_log_round_trips() -> None:
    segment = Segment(b"", dict.fromkeys(IndexKind, b""), 10, False, False)
    assert read_all(write(segment).reader()) == (b"", segment.indexes)


def damaged(objects: dict[str, bytes], key: str, cut: int | None = None, bit: int | None = None) -> dict[str, bytes]:
    data = bytearray(objects[key])
    if cut is not None:
        del data[cut:]
    if bit is not None:
        data[bit // 8] ^= 1 << bit % 8
    return {**objects, key: bytes(data)}


def check_damage(written: Written, objects: dict[str, bytes], truncated: bool) -> None:
    """Our error, or (where the format can tell) the exact bytes."""
    try:
        found = read_all(written.reader(objects))
    except OffloadError:
        return
    if truncated or written.segment.encryption:
        assert found == (written.segment.log, written.segment.indexes)


def check_data_damage(written: Written, reader: AivenSegmentReader, objects: dict[str, bytes], key: str,
                      damage: bytes, truncated: bool) -> None:  # fmt: skip
    """As :func:`check_damage` for ``.log`` or ``.indexes``, through a
    reader of the intact manifest (unwrapping its data key once)."""
    objects[key] = damage
    try:
        found = read_all(reader)
    except OffloadError:
        return
    if truncated or written.segment.encryption:
        assert found == (written.segment.log, written.segment.indexes)


@given(segments(max_log=300), st.sampled_from(SUFFIXES), st.data())
def test_a_truncated_or_flipped_object_gives_only_our_errors(
    segment: Segment, suffix: Suffix, data: st.DataObject
) -> None:
    written = write(segment)
    key = written.key(suffix)
    size = len(written.objects[key])
    if size == 0:
        return
    if data.draw(st.booleans(), label="truncate"):
        check_damage(written, damaged(written.objects, key, cut=data.draw(st.integers(0, size - 1))), truncated=True)
    else:
        check_damage(written, damaged(written.objects, key, bit=data.draw(st.integers(0, 8 * size - 1))), False)


@pytest.mark.parametrize(("compression", "encryption"), [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("suffix", ["log", "indexes"])
def test_every_truncation_and_bit_flip_of_data_gives_only_our_errors(
    compression: bool, encryption: bool, suffix: Suffix
) -> None:
    indexes: dict[IndexKind, bytes | None] = {
        IndexKind.OFFSET: bytes(range(16)), IndexKind.TIMESTAMP: b"", IndexKind.PRODUCER_SNAPSHOT: b"snap" * 3,
        IndexKind.LEADER_EPOCH: b"0\n1\n0 100\n", IndexKind.TRANSACTION: b"txn!",
    }  # fmt: skip
    written = write(Segment(b"kafka batches " * 9 + bytes(range(40)), indexes, 32, compression, encryption))
    key = written.key(suffix)
    objects = dict(written.objects)
    reader = written.reader(objects)
    size = len(written.objects[key])
    for cut in range(size):
        check_data_damage(written, reader, objects, key, damaged(written.objects, key, cut=cut)[key], truncated=True)
    for bit in range(8 * size):
        check_data_damage(written, reader, objects, key, damaged(written.objects, key, bit=bit)[key], False)


@pytest.mark.parametrize("compression", [False, True])
def test_every_truncation_and_bit_flip_of_an_unencrypted_manifest_gives_only_our_errors(compression: bool) -> None:
    written = write(Segment(b"records " * 40, dict.fromkeys(IndexKind, b"ix"), 100, compression, False))
    key = written.key("rsm-manifest")
    size = len(written.objects[key])
    for cut in range(size):
        check_damage(written, damaged(written.objects, key, cut=cut), truncated=True)
    for bit in range(8 * size):
        check_damage(written, damaged(written.objects, key, bit=bit), truncated=False)
