"""Pulsar messages inside ledger entries: pure decoding and framing.

An entry a Pulsar broker writes to a ledger is::

    [0x0e02 | uint32 size | BrokerEntryMetadata]    optional (broker entry interceptors)
    [0x0e01 | uint32 crc32c]                         optional (checksum of the rest)
    uint32 size | MessageMetadata | payload

all integers big-endian. The payload is compressed as ``compression`` says.
A batch (``num_messages_in_batch`` present) is, once decompressed, a run of
``uint32 size | SingleMessageMetadata | payload_size bytes``.

The checksum is not verified here: it was checked when the broker took the
message in, and the offloaded copy is covered by the block framing.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import DecodeError

from ..errors import ConfigError, FormatError
from ..proto import BrokerEntryMetadata, MessageMetadata, PulsarApi_pb2, SingleMessageMetadata

__all__ = [
    "PulsarMessage",
    "decode_entry",
    "encode_batch_payload",
    "encode_entry",
]

MAGIC_CHECKSUM = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_CompressionType = PulsarApi_pb2.CompressionType
_Message = TypeVar("_Message", MessageMetadata, SingleMessageMetadata)


@dataclass(frozen=True)
class PulsarMessage:
    """One message as a Pulsar consumer would see it.

    ``batch_index`` is ``None`` for a message that was not batched (and for
    an encrypted batch, which cannot be split without its key: ``payload``
    is then the whole encrypted batch). ``payload`` is ``None`` for a
    message published with a null value. Times are milliseconds since the
    epoch; ``event_time`` is ``None`` when the producer did not set one."""

    batch_index: int | None
    payload: bytes | None
    publish_time: int
    event_time: int | None
    key: str | None
    properties: tuple[tuple[str, str], ...]
    producer_name: str
    sequence_id: int
    encrypted: bool = False


def decode_entry(entry: bytes) -> list[PulsarMessage]:
    """The messages in one ledger entry, in batch order.

    Marker entries (replication and transaction markers, which consumers
    never see) and messages compacted out of a batch yield nothing.
    Raises :class:`FormatError` for anything malformed, and
    :class:`ConfigError` if the payload uses a compression whose codec is
    not installed (LZ4, ZSTD and Snappy need ``pyarrow``)."""
    metadata, payload = _split(entry)
    if metadata.HasField("marker_type"):
        return []
    publish_time, producer = int(metadata.publish_time), str(metadata.producer_name)
    sequence_id = int(metadata.sequence_id)
    if metadata.encryption_keys:
        return [
            PulsarMessage(
                None, payload, publish_time, _event_time(metadata), _key(metadata), _properties(metadata.properties),
                producer, sequence_id, encrypted=True,
            )
        ]  # fmt: skip
    payload = _decompress(metadata, payload)
    if not metadata.HasField("num_messages_in_batch"):
        value = None if metadata.null_value else payload
        return [
            PulsarMessage(
                None, value, publish_time, _event_time(metadata), _key(metadata), _properties(metadata.properties),
                producer, sequence_id,
            )
        ]  # fmt: skip
    messages = []
    for index, (single, body) in enumerate(_batch(payload, metadata.num_messages_in_batch)):
        if single.compacted_out:
            continue
        messages.append(
            PulsarMessage(
                index,
                None if single.null_value else body,
                publish_time,
                _event_time(single),
                _key(single),
                _properties(single.properties),
                producer,
                int(single.sequence_id) if single.HasField("sequence_id") else sequence_id + index,
            )
        )
    return messages


def encode_entry(
    metadata: MessageMetadata,
    payload: bytes | memoryview,
    *,
    checksum: int | None = None,
    broker_entry_metadata: BrokerEntryMetadata | None = None,
) -> bytes:
    """Frame one message as a broker stores it. ``checksum`` (the CRC32C a
    client sent) adds the checksum section; it is not computed here. The
    payload is copied once, into the entry."""
    serialized: bytes = metadata.SerializeToString()
    body = _U32.pack(len(serialized)) + serialized + payload
    if checksum is not None:
        body = _U16.pack(MAGIC_CHECKSUM) + _U32.pack(checksum) + body
    if broker_entry_metadata is not None:
        extra = broker_entry_metadata.SerializeToString()
        body = _U16.pack(MAGIC_BROKER_ENTRY_METADATA) + _U32.pack(len(extra)) + extra + body
    return body


def encode_batch_payload(messages: Iterable[tuple[SingleMessageMetadata, bytes]]) -> bytes:
    """A batch's (uncompressed) payload; each metadata's ``payload_size``
    must equal its payload's length."""
    parts = []
    for single, payload in messages:
        if single.payload_size != len(payload):
            raise ValueError(f"payload_size is {single.payload_size}, the payload has {len(payload)} bytes")
        serialized = single.SerializeToString()
        parts.append(_U32.pack(len(serialized)) + serialized + payload)
    return b"".join(parts)


def _split(entry: bytes) -> tuple[MessageMetadata, bytes]:
    view = memoryview(entry)
    position = 0
    if len(view) >= 6 and _U16.unpack_from(view, 0)[0] == MAGIC_BROKER_ENTRY_METADATA:
        size = _U32.unpack_from(view, 2)[0]
        position = 6 + size
    if len(view) >= position + 6 and _U16.unpack_from(view, position)[0] == MAGIC_CHECKSUM:
        position += 6
    if len(view) < position + 4:
        raise FormatError(f"entry of {len(view)} bytes is too short for a Pulsar message")
    size = _U32.unpack_from(view, position)[0]
    position += 4
    if size == 0 or position + size > len(view):
        raise FormatError(f"message metadata of {size} bytes does not fit the {len(view)}-byte entry")
    metadata = _parsed(MessageMetadata(), view[position : position + size], "message metadata")
    return metadata, bytes(view[position + size :])


def _parsed(message: _Message, data: memoryview, what: str) -> _Message:
    """``message`` parsed from ``data``, its required fields present (proto2
    parsing alone does not check them)."""
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise FormatError(f"{what} does not parse: {exc}") from None
    if not message.IsInitialized():
        raise FormatError(f"{what} lacks required fields: {', '.join(message.FindInitializationErrors())}")
    return message


def _decompress(metadata: MessageMetadata, payload: bytes) -> bytes:
    compression = metadata.compression
    if compression == _CompressionType.NONE:
        return payload
    size = int(metadata.uncompressed_size)
    decompress = _DECOMPRESSORS.get(compression)
    if decompress is None:
        raise FormatError(f"unknown compression type {compression}")
    try:
        result = decompress(payload, size)
    except (ConfigError, FormatError):
        raise
    except Exception as exc:
        name = _CompressionType.Name(compression)
        raise FormatError(f"{name} payload of {len(payload)} bytes does not decompress: {exc}") from None
    if len(result) != size:
        raise FormatError(f"payload decompressed to {len(result)} bytes, its metadata says {size}")
    return result


def _zlib(payload: bytes, size: int) -> bytes:
    return zlib.decompress(payload, bufsize=max(size, 1))


def _arrow_codec(name: str) -> Callable[[bytes, int], bytes]:
    def decompress(payload: bytes, size: int) -> bytes:
        try:
            import pyarrow
        except ImportError:
            raise ConfigError(
                f"this message is compressed with {name.upper()}, which needs pyarrow: "
                "pip install -e '.[spark]' in a clone of offload-core"
            ) from None
        codec = pyarrow.Codec(name)
        result = bytes(codec.decompress(payload, decompressed_size=size, asbytes=True))
        if name in _PADS_SHORT_OUTPUT and size > 0 and _decompresses(codec, payload, size - 1):
            # Arrow fills a buffer larger than the data with whatever was there.
            raise FormatError(f"{name.upper()} payload holds fewer than the {size} bytes its metadata says")
        return result

    return decompress


_PADS_SHORT_OUTPUT = frozenset({"lz4_raw", "snappy"})


def _decompresses(codec: object, payload: bytes, size: int) -> bool:
    try:
        codec.decompress(payload, decompressed_size=size)  # type: ignore[attr-defined]
    except Exception:
        return False
    return True


_DECOMPRESSORS: dict[int, Callable[[bytes, int], bytes]] = {
    _CompressionType.ZLIB: _zlib,
    # Pulsar's LZ4 codec writes a bare block, without the frame format.
    _CompressionType.LZ4: _arrow_codec("lz4_raw"),
    _CompressionType.ZSTD: _arrow_codec("zstd"),
    _CompressionType.SNAPPY: _arrow_codec("snappy"),
}


def _batch(payload: bytes, count: int) -> list[tuple[SingleMessageMetadata, bytes]]:
    view = memoryview(payload)
    position = 0
    messages = []
    for index in range(count):
        if position + 4 > len(view):
            raise FormatError(f"batch of {count} messages ends after {index}")
        size = _U32.unpack_from(view, position)[0]
        position += 4
        single = _parsed(
            SingleMessageMetadata(), view[position : position + size], f"metadata of message {index} in the batch"
        )
        position += size
        end = position + single.payload_size
        if single.payload_size < 0 or end > len(view):
            raise FormatError(f"message {index} in the batch claims {single.payload_size} bytes past the payload's end")
        messages.append((single, bytes(view[position:end])))
        position = end
    if position != len(view):
        raise FormatError(f"batch of {count} messages leaves {len(view) - position} bytes unread")
    return messages


def _event_time(metadata: MessageMetadata | SingleMessageMetadata) -> int | None:
    return int(metadata.event_time) or None


def _key(metadata: MessageMetadata | SingleMessageMetadata) -> str | None:
    if metadata.HasField("partition_key") and not metadata.null_partition_key:
        return str(metadata.partition_key)
    return None


def _properties(pairs: Sequence[PulsarApi_pb2.KeyValue]) -> tuple[tuple[str, str], ...]:
    return tuple((pair.key, pair.value) for pair in pairs)
