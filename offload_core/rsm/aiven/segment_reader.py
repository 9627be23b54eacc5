"""A reader of one segment tiered by Aiven's plugin: the ``.log`` bytes of
any original byte range, and each index of ``.indexes``, as Kafka wrote
them. I/O only through the range reader it is given."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ...errors import ConfigError, FormatError, InvalidRangeError
from .chunk_index import chunks
from .chunk_transforms import IV_SIZE, TAG_SIZE, ChunkTransform, decode_chunk, unwrap_data_key
from .keys import ObjectKey
from .manifest import IndexKind, SegmentManifest, decode_manifest

RangeReader = Callable[[str, int, int], bytes]
"""``(object key, start, end)`` -> the object's bytes ``[start, end)``."""


class AivenSegmentReader:
    """One segment's objects. Construction decodes the manifest and unwraps
    the data key: :class:`FormatError` naming the manifest for a manifest
    the plugin would not read, :class:`ConfigError` naming the key pair when
    ``private_keys`` (key-pair id -> private key PEM) lacks it or holds
    another key."""

    def __init__(self, read_range: RangeReader, segment: ObjectKey, manifest_bytes: bytes,
                 private_keys: Mapping[str, bytes] | None = None) -> None:  # fmt: skip
        self._read_range = read_range
        self._log_key = segment.with_suffix("log").key
        self._indexes_key = segment.with_suffix("indexes").key
        manifest_key = segment.with_suffix("rsm-manifest").key
        self.manifest: SegmentManifest = decode_manifest(manifest_bytes, manifest_key)
        self._chunks = chunks(self.manifest.chunk_index, self._log_key)
        encryption = self.manifest.encryption
        if encryption is None:
            self._transform = ChunkTransform(self.manifest.compression)
            return
        pem = (private_keys or {}).get(encryption.key_pair_id)
        if pem is None:
            raise ConfigError(
                f"{manifest_key!r} is encrypted with key pair {encryption.key_pair_id!r}: give that pair's private key"
            )
        data_key = unwrap_data_key(
            encryption.wrapped_data_key, pem, key_pair_id=encryption.key_pair_id, key=manifest_key
        )
        self._transform = ChunkTransform(self.manifest.compression, data_key, encryption.aad)

    @property
    def size(self) -> int:
        """The size of the segment's original ``.log``."""
        return self.manifest.chunk_index.original_file_size

    def read_log(self, start: int = 0, end: int | None = None) -> bytes:
        """The original ``.log`` bytes ``[start, end)`` (``end`` defaults to
        the size), decoding only the chunks that hold them, fetched in one
        ranged read. Raises :class:`InvalidRangeError` for a range outside
        the segment, :class:`FormatError` naming the object for a chunk that
        does not decode or an object shorter than its chunk index says."""
        end = self.size if end is None else end
        if not 0 <= start <= end <= self.size:
            raise InvalidRangeError(f"range [{start}, {end}) is outside {self._log_key!r} ({self.size} bytes)")
        if start == end:
            return b""
        size = self.manifest.chunk_index.original_chunk_size
        needed = self._chunks[start // size : (end - 1) // size + 1]
        stored = self._read(self._log_key, needed[0].stored_start, needed[-1].stored_end)
        first = needed[0].stored_start
        decoded = b"".join(
            decode_chunk(stored[c.stored_start - first : c.stored_end - first], self._transform,
                         original_size=c.original_end - c.original_start, key=self._log_key, index=c.index)
            for c in needed
        )  # fmt: skip
        return decoded[start - needed[0].original_start : end - needed[0].original_start]

    def read_index(self, kind: IndexKind) -> bytes | None:
        """The bytes Kafka wrote for index ``kind``; None for a transaction
        index the segment does not have. Indexes are encrypted when the
        segment is, never compressed. Raises :class:`FormatError` naming
        ``.indexes`` when it does not decrypt or is too short."""
        place = self.manifest.indexes[kind]
        if place is None:
            return None
        if place.size == 0:
            return b""
        stored = self._read(self._indexes_key, place.position, place.position + place.size)
        if self._transform.data_key is None:
            return stored
        transform = ChunkTransform(False, self._transform.data_key, self._transform.aad)
        plain_size = place.size - IV_SIZE - TAG_SIZE
        position = list(IndexKind).index(kind)
        return decode_chunk(stored, transform, original_size=plain_size, key=self._indexes_key, index=position)

    def _read(self, key: str, start: int, end: int) -> bytes:
        data = self._read_range(key, start, end)
        if len(data) != end - start:
            raise FormatError(
                f"{key!r} gave {len(data)} bytes at [{start}, {end}): the object is shorter than its manifest says"
            )
        return data
