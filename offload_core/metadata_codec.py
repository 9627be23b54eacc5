"""User-metadata values for stores that carry metadata in HTTP headers.

S3 and Azure accept only ASCII header values. Non-ASCII values are stored
RFC 2047-style (``=?UTF-8?B?<base64>?=``, as AWS SDKs do) and decoded on
read; a value that merely looks encoded is encoded too, so every string
round-trips exactly. Pure functions.
"""

from __future__ import annotations

import base64

__all__ = ["decode_header_value", "encode_header_value"]

_PREFIX, _SUFFIX = "=?UTF-8?B?", "?="


def encode_header_value(value: str) -> str:
    """``value`` as printable ASCII that :func:`decode_header_value` inverts."""
    if value.isascii() and value.isprintable() and not value.startswith("=?") and value == value.strip():
        return value
    return _PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _SUFFIX


def decode_header_value(value: str) -> str:
    """Inverse of :func:`encode_header_value`; other values pass through."""
    if value.startswith(_PREFIX) and value.endswith(_SUFFIX):
        try:
            return base64.b64decode(value[len(_PREFIX) : -len(_SUFFIX)], validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return value
    return value
