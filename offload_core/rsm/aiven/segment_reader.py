"""A reader of one segment tiered by Aiven's plugin: the ``.log`` bytes of
any original byte range, and each index of ``.indexes``, as Kafka wrote
them. I/O only through the range reader it is given. Decoded chunks are
kept (up to a byte budget, least recently used out first), so reads whose
windows straddle chunks decode each chunk once."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

from ...errors import ConfigError, FormatError, InvalidRangeError
from .chunk_index import Chunk, chunks
from .chunk_transforms import IV_SIZE, TAG_SIZE, ChunkTransform, decode_chunk, unwrap_data_key
from .keys import ObjectKey
from .manifest import IndexKind, SegmentManifest, decode_manifest

RangeReader = Callable[[str, int, int], bytes]
"""``(object key, start, end)`` -> the object's bytes ``[start, end)``."""

DEFAULT_DECODED_CACHE_BYTES = 4 * 2**20


class AivenSegmentReader:
    """One segment's objects. Construction decodes the manifest and unwraps
    the data key: :class:`FormatError` naming the manifest for a manifest
    the plugin would not read, :class:`ConfigError` naming the key pair when
    ``private_keys`` (key-pair id -> private key PEM) lacks it or holds
    another key. ``cache_bytes`` bounds the decoded chunks kept."""

    def __init__(self, read_range: RangeReader, segment: ObjectKey, manifest_bytes: bytes,
                 private_keys: Mapping[str, bytes] | None = None, *,
                 cache_bytes: int = DEFAULT_DECODED_CACHE_BYTES) -> None:  # fmt: skip
        self._read_range = read_range
        self._cache_bytes = cache_bytes
        self._decoded: OrderedDict[int, bytes] = OrderedDict()
        self._held = 0
        self.log_key = segment.with_suffix("log").key
        self.indexes_key = segment.with_suffix("indexes").key
        manifest_key = segment.with_suffix("rsm-manifest").key
        self.manifest: SegmentManifest = decode_manifest(manifest_bytes, manifest_key)
        self.chunks: list[Chunk] = chunks(self.manifest.chunk_index, self.log_key)
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
        the size), decoding only the chunks that hold them and are not kept,
        each run of those fetched in one ranged read. Raises :class:`InvalidRangeError` for a range outside
        the segment, :class:`FormatError` naming the object for a chunk that
        does not decode or an object shorter than its chunk index says."""
        end = self.size if end is None else end
        if not 0 <= start <= end <= self.size:
            raise InvalidRangeError(f"range [{start}, {end}) is outside {self.log_key!r} ({self.size} bytes)")
        if start == end:
            return b""
        size = self.manifest.chunk_index.original_chunk_size
        needed = self.chunks[start // size : (end - 1) // size + 1]
        decoded: dict[int, bytes] = {}
        run: list[Chunk] = []  # consecutive chunks not kept: one ranged read
        for chunk in needed:
            kept = self.cached(chunk.index)
            if kept is None:
                run.append(chunk)
                continue
            decoded[chunk.index] = kept
            self._decode_into(decoded, run)
            run = []
        self._decode_into(decoded, run)
        joined = b"".join(decoded[c.index] for c in needed)
        return joined[start - needed[0].original_start : end - needed[0].original_start]

    def _decode_into(self, decoded: dict[int, bytes], run: list[Chunk]) -> None:
        if run:
            decoded.update(zip((c.index for c in run), self.decode_run(run, self.fetch_run(run)), strict=True))

    def fetch_run(self, run: Sequence[Chunk]) -> bytes:
        """The stored bytes of consecutive chunks ``run``, in one ranged read."""
        return self._read(self.log_key, run[0].stored_start, run[-1].stored_end)

    def cached(self, index: int) -> bytes | None:
        """Chunk ``index`` decoded, if it is kept."""
        data = self._decoded.get(index)
        if data is not None:
            self._decoded.move_to_end(index)
        return data

    def decode_run(self, run: Sequence[Chunk], stored: bytes) -> list[bytes]:
        """The chunks ``run`` decoded from their ``stored`` bytes (those kept
        are not decoded again), and kept. Raises :class:`FormatError` naming
        the object and chunk that does not decode."""
        first = run[0].stored_start
        out = []
        for c in run:
            data = self.cached(c.index)
            if data is None:
                piece = stored[c.stored_start - first : c.stored_end - first]
                size = c.original_end - c.original_start
                data = decode_chunk(piece, self._transform, original_size=size, key=self.log_key, index=c.index)
                self._keep(c.index, data)
            out.append(data)
        return out

    def _keep(self, index: int, data: bytes) -> None:
        self._decoded[index] = data
        self._held += len(data)
        while self._held > self._cache_bytes and len(self._decoded) > 1:
            self._held -= len(self._decoded.popitem(last=False)[1])

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
        stored = self._read(self.indexes_key, place.position, place.position + place.size)
        if self._transform.data_key is None:
            return stored
        transform = ChunkTransform(False, self._transform.data_key, self._transform.aad)
        plain_size = place.size - IV_SIZE - TAG_SIZE
        position = list(IndexKind).index(kind)
        return decode_chunk(stored, transform, original_size=plain_size, key=self.indexes_key, index=position)

    def _read(self, key: str, start: int, end: int) -> bytes:
        data = self._read_range(key, start, end)
        if len(data) != end - start:
            raise FormatError(
                f"{key!r} gave {len(data)} bytes at [{start}, {end}): the object is shorter than its manifest says"
            )
        return data
