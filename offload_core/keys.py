"""Object-key validation: pure, shared by every driver.

A key is a ``/``-separated relative path. Whatever a topic or ledger name
contains, a valid key can never name anything outside the store's root.
"""

from __future__ import annotations

from .errors import InvalidKeyError

__all__ = ["MAX_KEY_BYTES", "MAX_SEGMENT_BYTES", "RESERVED_SEGMENT_PREFIX", "validate_key", "validate_prefix"]

MAX_KEY_BYTES = 1024
"""S3's limit, the tightest of the supported backends."""

MAX_SEGMENT_BYTES = 240
"""Longest ``/``-separated segment, in bytes of UTF-8. Directory stores
(local disks, HDFS) cap a file name at 255 bytes and keep sidecars named
``{segment}.pending`` / ``{segment}.json`` beside an object, so a longer
segment would pass here and fail halfway through a write there."""

RESERVED_SEGMENT_PREFIX = ".offload-"
"""Segments starting with this are the drivers' own bookkeeping (temporary
files, metadata sidecars) and never user keys."""


def validate_key(key: object) -> str:
    """Return ``key`` if it is a valid object key.

    Raises :class:`InvalidKeyError` (naming the key and the rule) for a
    non-string, empty, absolute, over-long key (:data:`MAX_KEY_BYTES`), one
    with a NUL byte, a backslash, an empty, ``.`` or ``..`` segment, a
    segment over :data:`MAX_SEGMENT_BYTES`, or a reserved segment.
    """
    if not isinstance(key, str):
        raise InvalidKeyError(f"object key must be a string, got {type(key).__name__}: {key!r}")
    if not key:
        raise InvalidKeyError("object key must not be empty")
    _check_text(key, what="object key")
    segments = key.split("/")
    if key.startswith("/"):
        raise InvalidKeyError(f"object key {key!r} is absolute; use a path relative to the store root")
    for segment in segments:
        _check_segment(key, segment)
    return key


def validate_prefix(prefix: object) -> str:
    """Return ``prefix`` if it is a valid listing prefix.

    A prefix is a key's leading characters: it may be empty and may end
    with ``/`` or mid-segment, but every complete segment obeys
    :func:`validate_key`'s rules. Raises :class:`InvalidKeyError`.
    """
    if not isinstance(prefix, str):
        raise InvalidKeyError(f"listing prefix must be a string, got {type(prefix).__name__}: {prefix!r}")
    if not prefix:
        return prefix
    _check_text(prefix, what="listing prefix")
    if prefix.startswith("/"):
        raise InvalidKeyError(f"listing prefix {prefix!r} is absolute; use a path relative to the store root")
    *complete, last = prefix.split("/")
    for segment in complete:
        _check_segment(prefix, segment)
    if last in (".", "..") or last.startswith(RESERVED_SEGMENT_PREFIX):
        raise InvalidKeyError(f"listing prefix {prefix!r} has a forbidden segment {last!r}")
    _check_segment_length(prefix, last)
    return prefix


def _check_text(text: str, *, what: str) -> None:
    if "\x00" in text:
        raise InvalidKeyError(f"{what} {text!r} contains a NUL byte")
    if "\\" in text:
        raise InvalidKeyError(f"{what} {text!r} contains a backslash; use '/' to separate segments")
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidKeyError(f"{what} {text!r} is not valid UTF-8 text") from exc
    if len(encoded) > MAX_KEY_BYTES:
        raise InvalidKeyError(f"{what} {text[:64]!r}... is {len(encoded)} bytes; the limit is {MAX_KEY_BYTES}")


def _check_segment(key: str, segment: str) -> None:
    if segment == "":
        raise InvalidKeyError(f"object key {key!r} has an empty segment (leading, trailing or doubled '/')")
    if segment in (".", ".."):
        raise InvalidKeyError(f"object key {key!r} has a {segment!r} segment, which could escape the store root")
    if segment.startswith(RESERVED_SEGMENT_PREFIX):
        raise InvalidKeyError(
            f"object key {key!r} has a segment starting with {RESERVED_SEGMENT_PREFIX!r}, "
            "which is reserved for the drivers' own files"
        )
    _check_segment_length(key, segment)


def _check_segment_length(key: str, segment: str) -> None:
    size = len(segment.encode("utf-8"))
    if size > MAX_SEGMENT_BYTES:
        raise InvalidKeyError(
            f"object key {key[:64]!r}... has a segment of {size} bytes; the limit per '/'-separated segment is "
            f"{MAX_SEGMENT_BYTES} bytes of UTF-8 (directory stores cap file names at 255): use shorter names"
        )
