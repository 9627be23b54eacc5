"""The records a directory store keeps beside each object (pure): a
sidecar holds the object's size and user metadata; a pending record, the
commit point of a write, also names the temporary file that becomes the
object. Also what fsspec's file infos say about an object."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..keys import RESERVED_SEGMENT_PREFIX

__all__ = ["decode_record", "encode_record", "etag_of", "is_reserved", "mtime_of", "record_problem"]

_TMP_NAME = re.compile(r"^[0-9a-f]{32}(\.pending)?$")


def encode_record(tmp: str, size: int, metadata: Mapping[str, str]) -> bytes:
    """A pending record (``tmp``: the temporary file to move into place)
    or, with ``tmp`` empty, a sidecar."""
    return json.dumps({"tmp": tmp, "size": size, "metadata": dict(metadata)}).encode()


def decode_record(raw: bytes) -> dict[str, Any]:
    """A record that :func:`record_problem` passed."""
    record: dict[str, Any] = json.loads(raw)
    return record


def record_problem(raw: bytes, *, pending: bool, tmp_dir: str) -> str | None:
    """Why ``raw`` is not a valid record, or ``None``. A pending record's
    ``tmp`` must name a file directly under ``tmp_dir`` (the store's
    ``.offload-tmp/``, with its trailing slash): anything else would make a
    roll-forward move an arbitrary file into the store."""
    try:
        record = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"not JSON: {exc}"
    if not isinstance(record, dict):
        return "not a JSON object"
    metadata = record.get("metadata")
    if not isinstance(metadata, dict) or not all(
        isinstance(name, str) and isinstance(value, str) for name, value in metadata.items()
    ):
        return "'metadata' is not a mapping of strings"
    if not pending:
        return None
    tmp = record.get("tmp")
    if not isinstance(tmp, str) or not tmp.startswith(tmp_dir) or not _TMP_NAME.match(tmp[len(tmp_dir) :]):
        return f"'tmp' is {tmp!r}, not a temporary file directly under {tmp_dir!r}"
    return None


def is_reserved(key: str) -> bool:
    """Whether ``key`` lies in a store's reserved space (temporary files,
    sidecars), which listings do not show."""
    return any(segment.startswith(RESERVED_SEGMENT_PREFIX) for segment in key.split("/"))


def etag_of(info: Mapping[str, Any]) -> str | None:
    """The entity tag an fsspec file info carries, if any."""
    for name in ("ETag", "etag", "md5Hash"):
        value = info.get(name)
        if value:
            return str(value).strip('"')
    return None


def mtime_of(info: Mapping[str, Any]) -> float | None:
    """An fsspec file info's modification time in seconds, if it has one."""
    for name in ("mtime", "modificationTime", "LastModified", "updated", "created"):
        value = info.get(name)
        if isinstance(value, (int, float)):
            # WebHDFS reports milliseconds.
            return float(value) / 1000 if name == "modificationTime" else float(value)
        timestamp = getattr(value, "timestamp", None)
        if callable(timestamp):
            return float(timestamp())
    return None
