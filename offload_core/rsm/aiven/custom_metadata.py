"""The custom metadata the plugin's copy returns to Kafka
(``SegmentCustomMetadataField``, ``SegmentCustomMetadataSerde``). Pure.

Kafka stores it in the segment's ``RemoteLogSegmentMetadata`` and hands it
back on every fetch and delete, so the plugin finds the objects under the
prefix they were written with even after ``key.prefix`` changes. It is a
Kafka tagged-fields section: an unsigned varint count, then per field in
tag order its unsigned varint tag, unsigned varint size and value. Tag 0 is
the total bytes uploaded for the segment (``.log``, ``.indexes`` and
manifest) as a zig-zag varlong, 1 the key prefix and 2 the object key
without prefix or suffix, both compact strings (unsigned varint length + 1,
then UTF-8).
"""

from __future__ import annotations

import enum

from ...errors import ConfigError


class CustomMetadataField(enum.Enum):
    """The fields ``custom.metadata.fields.include`` may name, by tag."""

    REMOTE_SIZE = 0
    OBJECT_PREFIX = 1
    OBJECT_KEY = 2

    @classmethod
    def parse(cls, names: str) -> tuple[CustomMetadataField, ...]:
        """The fields of a comma-separated list as the plugin's config takes
        it (blank: none); :class:`ConfigError` naming an unknown one."""
        fields = []
        for name in filter(None, (part.strip() for part in names.split(","))):
            if name not in cls.__members__:
                raise ConfigError(
                    f"custom.metadata.fields.include names {name!r}; the plugin knows {', '.join(cls.__members__)}"
                )
            fields.append(cls[name])
        return tuple(fields)


def encode_custom_metadata(
    fields: tuple[CustomMetadataField, ...], *, remote_size: int, prefix: str, object_key: str
) -> bytes | None:
    """The bytes the plugin returns for ``fields`` (None for no fields, as
    the plugin returns no custom metadata then)."""
    if not fields:
        return None
    values = {
        CustomMetadataField.REMOTE_SIZE: _uvarint((remote_size << 1) ^ (remote_size >> 63)),
        CustomMetadataField.OBJECT_PREFIX: _compact_string(prefix),
        CustomMetadataField.OBJECT_KEY: _compact_string(object_key),
    }
    chosen = sorted(set(fields), key=lambda field: field.value)
    out = bytearray(_uvarint(len(chosen)))
    for field in chosen:
        out += _uvarint(field.value) + _uvarint(len(values[field])) + values[field]
    return bytes(out)


def _compact_string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _uvarint(len(data) + 1) + data


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
