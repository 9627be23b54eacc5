"""Writing one segment as Aiven's plugin does (``copyLogSegmentData``):
the inverse of :mod:`.segment_reader`. Pure: bytes in, bytes out, with the
randomness (data key, AAD, IVs) drawn from the function it is given.

The ``.log`` is cut into chunks of the configured size, each transformed
on its own (:func:`~.chunk_transforms.encode_chunk`); ``.indexes`` holds
each index whole, encrypted but never compressed; the manifest records
both and, like the plugin's, the segment's metadata. A compressed segment
gets a ``variable`` chunk index, any other a ``fixed`` one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from Cryptodome.Random import get_random_bytes

from ...errors import ConfigError, StateError
from ..types import RemoteLogSegmentMetadata
from .chunk_index import ChunkIndex, FixedChunkIndex, VariableChunkIndex
from .chunk_transforms import (
    AAD_SIZE,
    DATA_KEY_SIZE,
    IV_SIZE,
    TAG_SIZE,
    ChunkTransform,
    encode_chunk,
    import_public_key,
    wrap_data_key,
)
from .custom_metadata import CustomMetadataField
from .keys import ObjectKey, Suffix
from .manifest import Encryption, IndexKind, IndexPlace, SegmentManifest

RandomBytes = Callable[[int], bytes]
"""``n`` -> ``n`` fresh random bytes."""

MAX_CHUNK_SIZE = (2**31 - 1) // 2
"""The plugin's upper bound for ``chunk.size``."""


@dataclass(frozen=True)
class EncryptionKeyPair:
    """The key pair new segments are encrypted for: its id (recorded in the
    manifest) and its public key PEM. Raises :class:`ConfigError` naming
    the pair for a PEM that cannot wrap data keys."""

    key_pair_id: str
    public_key_pem: bytes

    def __post_init__(self) -> None:
        import_public_key(self.public_key_pem, key_pair_id=self.key_pair_id)


@dataclass(frozen=True)
class AivenWriteSettings:
    """What the plugin's ``rsm.config.*`` decides about writing a segment.
    Raises :class:`ConfigError` for a chunk size outside the plugin's range."""

    chunk_size: int
    compression: bool = False
    compression_heuristic: bool = False
    encryption: EncryptionKeyPair | None = None
    key_prefix: str = ""
    custom_metadata_fields: tuple[CustomMetadataField, ...] = ()

    def __post_init__(self) -> None:
        if not 1 <= self.chunk_size <= MAX_CHUNK_SIZE:
            raise ConfigError(f"chunk.size {self.chunk_size} is outside the plugin's range 1 to {MAX_CHUNK_SIZE}")


def segment_key(prefix: str, metadata: RemoteLogSegmentMetadata, suffix: Suffix) -> ObjectKey:
    """The key the plugin gives the segment's ``suffix`` object."""
    segment = metadata.segment_id
    return ObjectKey(prefix, segment.topic_partition.topic, segment.topic_id_partition.topic_id,
                     segment.topic_partition.partition, metadata.start_offset, segment.id, suffix)  # fmt: skip


def main_path(key: ObjectKey) -> str:
    """The key without prefix and suffix (the plugin's ``mainPath``)."""
    return key.key[len(key.prefix) : -len(key.suffix) - 1]


def segment_transform(
    compression: bool, encrypted: bool, random_bytes: RandomBytes = get_random_bytes
) -> ChunkTransform:
    """A segment's transform, with a fresh data key and AAD (drawn in that
    order, as the plugin does) when ``encrypted``."""
    if not encrypted:
        return ChunkTransform(compression)
    data_key = random_bytes(DATA_KEY_SIZE)
    return ChunkTransform(compression, data_key, random_bytes(AAD_SIZE))


class LogEncoder:
    """A ``.log`` fed in pieces of any size, stored chunk by chunk; the
    chunk index once it is finished. Holds at most one chunk."""

    def __init__(self, transform: ChunkTransform, chunk_size: int, random_bytes: RandomBytes = get_random_bytes):
        self._transform = transform
        self._chunk_size = chunk_size
        self._random_bytes = random_bytes
        self._pending = bytearray()
        self._sizes: list[int] = []
        self._original_size = 0
        self._index: ChunkIndex | None = None

    def feed(self, data: bytes) -> list[bytes]:
        """The stored chunks ``data`` completes, in order."""
        self._pending += data
        stored = []
        while len(self._pending) > self._chunk_size:
            stored.append(self._encode(bytes(self._pending[: self._chunk_size])))
            del self._pending[: self._chunk_size]
        return stored

    def finish(self) -> bytes:
        """The last stored chunk (empty for an empty ``.log``). Raises
        :class:`StateError` for an empty ``.log`` with compression or
        encryption, which the plugin cannot store (it builds no chunk
        index then; Kafka never tiers an empty segment)."""
        last = self._encode(bytes(self._pending)) if self._pending else b""
        self._pending.clear()
        transform = self._transform
        if not self._sizes and (transform.compression or transform.data_key is not None):
            raise StateError("an empty .log cannot be stored with compression or encryption: the plugin "
                             "builds no chunk index for it (Kafka never tiers an empty segment)")  # fmt: skip
        if transform.compression:
            self._index = VariableChunkIndex(self._chunk_size, self._original_size, tuple(self._sizes))
        else:
            overhead = 0 if transform.data_key is None else IV_SIZE + TAG_SIZE
            final = self._sizes[-1] if self._sizes else 0
            self._index = FixedChunkIndex(self._chunk_size, self._original_size, self._chunk_size + overhead, final)
        return last

    @property
    def chunk_index(self) -> ChunkIndex:
        """The chunk index; only after :meth:`finish`."""
        if self._index is None:
            raise StateError("the .log is not finished: call finish() first")
        return self._index

    def _encode(self, chunk: bytes) -> bytes:
        iv = self._random_bytes(IV_SIZE) if self._transform.data_key is not None else b""
        stored = encode_chunk(chunk, self._transform, iv=iv)
        self._sizes.append(len(stored))
        self._original_size += len(chunk)
        return stored


def encode_indexes(
    indexes: Mapping[IndexKind, bytes | None], transform: ChunkTransform, random_bytes: RandomBytes = get_random_bytes
) -> tuple[bytes, dict[IndexKind, IndexPlace | None]]:
    """``.indexes`` and where each index sits in it. ``indexes`` holds the
    bytes of every kind but :attr:`IndexKind.TRANSACTION`, which may be
    None (the segment has no ``.txnindex``). An empty index takes no
    bytes, encrypted or not."""
    encrypting = ChunkTransform(False, transform.data_key, transform.aad)
    out = bytearray()
    places: dict[IndexKind, IndexPlace | None] = {}
    for kind in IndexKind:
        data = indexes.get(kind)
        if data is None:
            if kind is not IndexKind.TRANSACTION:
                raise StateError(f"the {kind.value} index is missing: every segment has one")
            places[kind] = None
            continue
        if data and transform.data_key is not None:
            data = encode_chunk(data, encrypting, iv=random_bytes(IV_SIZE))
        places[kind] = IndexPlace(len(out), len(data))
        out += data
    return bytes(out), places


def segment_metadata_json(metadata: RemoteLogSegmentMetadata) -> dict[str, Any]:
    """``remoteLogSegmentMetadata`` as the plugin's manifest holds it (its
    ``KafkaTypeSerdeModule``: these fields in this order, epochs ascending)."""
    segment = metadata.segment_id
    return {
        "remoteLogSegmentId": {
            "topicIdPartition": {
                "topicId": segment.topic_id_partition.topic_id,
                "topicPartition": {
                    "topic": segment.topic_partition.topic,
                    "partition": segment.topic_partition.partition,
                },
            },  # fmt: skip
            "id": segment.id,
        },
        "startOffset": metadata.start_offset,
        "endOffset": metadata.end_offset,
        "maxTimestampMs": metadata.max_timestamp_ms,
        "brokerId": metadata.broker_id,
        "eventTimestampMs": metadata.event_timestamp_ms,
        "segmentLeaderEpochs": {str(epoch): offset for epoch, offset in sorted(metadata.segment_leader_epochs.items())},
    }


def segment_manifest(
    metadata: RemoteLogSegmentMetadata,
    chunk_index: ChunkIndex,
    places: dict[IndexKind, IndexPlace | None],
    transform: ChunkTransform,
    key_pair: EncryptionKeyPair | None,
) -> SegmentManifest:
    """The manifest of a segment written with ``transform``; its data key
    wrapped for ``key_pair`` (required when ``transform`` encrypts).
    Raises :class:`ConfigError` naming the key pair for a bad public key."""
    encryption = None
    if transform.data_key is not None:
        if key_pair is None:
            raise ConfigError("an encrypted segment needs the key pair its data key is wrapped for")
        wrapped = wrap_data_key(transform.data_key, key_pair.public_key_pem, key_pair_id=key_pair.key_pair_id)
        encryption = Encryption(key_pair.key_pair_id, wrapped, transform.aad)
    return SegmentManifest(chunk_index, places, transform.compression, encryption, segment_metadata_json(metadata))
