"""The plugin's ``.rsm-manifest``, version 1 (``SegmentManifestV1``). Pure.

Compact JSON, fields in this order: ``version`` (``"1"``), ``chunkIndex``,
``segmentIndexes`` (``offset``, ``timestamp``, ``producerSnapshot``,
``leaderEpoch``, ``transaction``: each ``{"position", "size"}`` in stored
bytes of ``.indexes``, ``transaction`` null when absent), ``compression``,
``encryption`` only when on (``{"dataKey": "<keyPairId>:<base64>", "aad":
"<base64>"}``), and ``remoteLogSegmentMetadata``, which the plugin writes
but never reads back: it is kept here as the JSON it is, to re-encode.
Like the plugin's reader, decoding refuses unknown fields.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
from dataclasses import dataclass
from typing import Any

from ...errors import FormatError
from .chunk_index import (
    ChunkIndex,
    FixedChunkIndex,
    VariableChunkIndex,
    decode_chunk_sizes,
    encode_chunk_sizes,
    stored_sizes,
)


class IndexKind(enum.Enum):
    """The indexes in ``.indexes``, in the order they are stored, by their
    manifest field."""

    OFFSET = "offset"
    TIMESTAMP = "timestamp"
    PRODUCER_SNAPSHOT = "producerSnapshot"
    LEADER_EPOCH = "leaderEpoch"
    TRANSACTION = "transaction"


@dataclass(frozen=True)
class IndexPlace:
    """Where one index is stored in ``.indexes``."""

    position: int
    size: int


@dataclass(frozen=True)
class Encryption:
    key_pair_id: str
    wrapped_data_key: bytes
    aad: bytes


@dataclass(frozen=True)
class SegmentManifest:
    chunk_index: ChunkIndex
    indexes: dict[IndexKind, IndexPlace | None]
    compression: bool
    encryption: Encryption | None
    remote_log_segment_metadata: Any = None


_FIXED = ("type", "originalChunkSize", "originalFileSize", "transformedChunkSize", "finalTransformedChunkSize")
_VARIABLE = ("type", "originalChunkSize", "originalFileSize", "transformedChunks")
_PLACE = ("position", "size")


def encode_manifest(manifest: SegmentManifest) -> bytes:
    """The manifest's bytes, as the plugin writes them."""
    index = manifest.chunk_index
    common = {"originalChunkSize": index.original_chunk_size, "originalFileSize": index.original_file_size}
    if isinstance(index, FixedChunkIndex):
        chunk_index: dict[str, Any] = {"type": "fixed", **common, "transformedChunkSize": index.transformed_chunk_size,
                                       "finalTransformedChunkSize": index.final_transformed_chunk_size}  # fmt: skip
    else:
        chunk_index = {
            "type": "variable",
            **common,
            "transformedChunks": encode_chunk_sizes(index.transformed_chunk_sizes),
        }
    places = {kind.value: _place(manifest.indexes.get(kind)) for kind in IndexKind}
    fields: dict[str, Any] = {"version": "1", "chunkIndex": chunk_index, "segmentIndexes": places,
                              "compression": manifest.compression}  # fmt: skip
    if (encryption := manifest.encryption) is not None:
        data_key = f"{encryption.key_pair_id}:{base64.b64encode(encryption.wrapped_data_key).decode('ascii')}"
        fields["encryption"] = {"dataKey": data_key, "aad": base64.b64encode(encryption.aad).decode("ascii")}
    if manifest.remote_log_segment_metadata is not None:
        fields["remoteLogSegmentMetadata"] = manifest.remote_log_segment_metadata
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def decode_manifest(data: bytes, key: str) -> SegmentManifest:
    """The manifest in ``data``, the object ``key``. Raises
    :class:`FormatError` naming ``key`` for anything but a version 1
    manifest with exactly the plugin's fields and a chunk index that adds
    up (see :func:`~.chunk_index.stored_sizes`)."""
    try:
        fields = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FormatError(f"manifest {key!r} is not JSON ({error})") from None
    top = _fields(fields, key, "manifest", required=("version", "chunkIndex", "segmentIndexes", "compression"),
                  optional=("encryption", "remoteLogSegmentMetadata"))  # fmt: skip
    if top["version"] != "1":
        raise FormatError(f"manifest {key!r} has version {top['version']!r}; only version '1' is known")
    indexes = _fields(top["segmentIndexes"], key, "segmentIndexes", required=tuple(kind.value for kind in IndexKind))
    places: dict[IndexKind, IndexPlace | None] = {}
    for kind in IndexKind:
        if indexes[kind.value] is None and kind is IndexKind.TRANSACTION:
            places[kind] = None
        else:
            place = _fields(indexes[kind.value], key, f"segmentIndexes.{kind.value}", required=_PLACE)
            places[kind] = IndexPlace(*(_count(place, name, key) for name in _PLACE))
    if not isinstance(top["compression"], bool):
        raise FormatError(f"manifest {key!r}: compression is {top['compression']!r}, not a boolean")
    chunk_index = _chunk_index(top["chunkIndex"], key)
    stored_sizes(chunk_index, key)
    return SegmentManifest(
        chunk_index=chunk_index,
        indexes=places,
        compression=top["compression"],
        encryption=None if top.get("encryption") is None else _encryption(top["encryption"], key),
        remote_log_segment_metadata=top.get("remoteLogSegmentMetadata"),
    )


def _place(place: IndexPlace | None) -> dict[str, int] | None:
    return None if place is None else {"position": place.position, "size": place.size}


def _chunk_index(value: Any, key: str) -> ChunkIndex:
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "fixed":
        fixed = _fields(value, key, "chunkIndex", required=_FIXED)
        return FixedChunkIndex(*(_count(fixed, name, key) for name in _FIXED[1:]))
    if kind == "variable":
        variable = _fields(value, key, "chunkIndex", required=_VARIABLE)
        if not isinstance(variable["transformedChunks"], str):
            raise FormatError(f"manifest {key!r}: chunkIndex.transformedChunks is not a string")
        sizes = decode_chunk_sizes(variable["transformedChunks"], key)
        return VariableChunkIndex(
            _count(variable, "originalChunkSize", key), _count(variable, "originalFileSize", key), sizes
        )
    raise FormatError(f"manifest {key!r}: chunkIndex type {kind!r} is neither 'fixed' nor 'variable'")


def _encryption(value: Any, key: str) -> Encryption:
    fields = _fields(value, key, "encryption", required=("dataKey", "aad"))
    data_key, aad = fields["dataKey"], fields["aad"]
    if not isinstance(data_key, str) or ":" not in data_key or not isinstance(aad, str):
        raise FormatError(f"manifest {key!r}: encryption must hold dataKey '<keyPairId>:<base64>' and aad '<base64>'")
    key_pair_id, _, wrapped = data_key.rpartition(":")
    try:
        return Encryption(key_pair_id, base64.b64decode(wrapped, validate=True), base64.b64decode(aad, validate=True))
    except binascii.Error as error:
        raise FormatError(f"manifest {key!r}: encryption holds bad base64 ({error})") from None


def _fields(
    value: Any, key: str, what: str, *, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FormatError(f"manifest {key!r}: {what} is not a JSON object")
    if unknown := sorted(set(value) - set(required) - set(optional)):
        raise FormatError(
            f"manifest {key!r}: {what} has unknown field(s) {', '.join(unknown)}; not a version 1 manifest"
        )
    if missing := [name for name in required if name not in value]:
        raise FormatError(f"manifest {key!r}: {what} lacks {', '.join(missing)}")
    return value


def _count(fields: dict[str, Any], name: str, key: str) -> int:
    value = fields[name]
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**63:
        raise FormatError(f"manifest {key!r}: {name} is {value!r}, not a non-negative integer")
    return value
