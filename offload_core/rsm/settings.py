"""The RemoteStorageManager's settings, parsed and checked before anything
is opened (Kafka hands them over as ``rsm.config.*``, prefix stripped)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..formats.kafka import DEFAULT_DECOMPRESSED_LIMIT

__all__ = [
    "DEFAULT_BUFFER_SIZE",
    "DEFAULT_INDEX_ENTRY_BYTES",
    "KNOWN_KEYS",
    "RsmSettings",
    "parse_settings",
    "positive",
]

DEFAULT_BUFFER_SIZE = 1024 * 1024
DEFAULT_INDEX_ENTRY_BYTES = 1024 * 1024
DEFAULT_RANGE_BYTES = 16 * 2**20
KNOWN_KEYS = ("storage.url", "storage.option.<name>", "key.prefix", "metadata.path", "broker.id",
              "index.entry.bytes", "fetch.buffer.bytes", "read.ahead.bytes", "read.ahead.bytes.per.reader",
              "read.ahead.range.bytes", "max.decompressed.bytes")  # fmt: skip
_OPTION = "storage.option."


@dataclass(frozen=True)
class RsmSettings:
    url: str
    driver_options: dict[str, Any]
    prefix: str
    metadata_path: str | None
    broker_id: int
    index_entry_bytes: int
    buffer_size: int
    read_ahead: tuple[int, int, int] | None  # total, per reader, range size
    max_decompressed_bytes: int


def positive(key: str, value: int) -> int:
    """``value`` if it is a positive integer; :class:`ConfigError` naming ``key`` otherwise."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"RemoteStorageManager setting {key} must be a positive integer, got {value!r}")
    return value


def _int(configs: Mapping[str, Any], key: str, default: int) -> int:
    value = configs.get(key, default)
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"RemoteStorageManager setting {key}={value!r} is not an integer") from None


def parse_settings(configs: Mapping[str, Any]) -> RsmSettings:
    """Checked settings; :class:`ConfigError` naming an unknown, missing or invalid key."""
    unknown = [k for k in configs if k not in KNOWN_KEYS and not k.startswith(_OPTION)]
    if unknown:
        raise ConfigError(f"unknown RemoteStorageManager setting(s) {sorted(unknown)}; known: {list(KNOWN_KEYS)}")
    if "storage.url" not in configs:
        raise ConfigError("RemoteStorageManager needs storage.url (e.g. s3://bucket/kafka or file:///data/tiered)")
    read_ahead = None
    if "read.ahead.bytes" in configs:
        range_bytes = positive("read.ahead.range.bytes", _int(configs, "read.ahead.range.bytes", DEFAULT_RANGE_BYTES))
        read_ahead = (positive("read.ahead.bytes", _int(configs, "read.ahead.bytes", 0)),
                      positive("read.ahead.bytes.per.reader",
                               _int(configs, "read.ahead.bytes.per.reader", 4 * range_bytes)), range_bytes)  # fmt: skip
    return RsmSettings(
        url=str(configs["storage.url"]),
        driver_options={k[len(_OPTION) :]: v for k, v in configs.items() if k.startswith(_OPTION)},
        prefix=str(configs.get("key.prefix", "")),
        metadata_path=str(configs["metadata.path"]) if "metadata.path" in configs else None,
        broker_id=_int(configs, "broker.id", 0),
        index_entry_bytes=positive("index.entry.bytes", _int(configs, "index.entry.bytes", DEFAULT_INDEX_ENTRY_BYTES)),
        buffer_size=positive("fetch.buffer.bytes", _int(configs, "fetch.buffer.bytes", DEFAULT_BUFFER_SIZE)),
        read_ahead=read_ahead,
        max_decompressed_bytes=positive(
            "max.decompressed.bytes", _int(configs, "max.decompressed.bytes", DEFAULT_DECOMPRESSED_LIMIT)
        ),
    )
