"""Broker configuration from a TOML file, with Pulsar's key names.

A flat table, as in Pulsar's ``broker.conf`` (``"filesystem"`` is Pulsar's
Hadoop MapFile offloader, with ``fileSystemURI`` and
``fileSystemProfilePath``; our local blob-store directory is
``"local-directory"``)::

    managedLedgerOffloadDriver = "local-directory"
    managedLedgerOffloadBucket = "/data/offload-bucket"
    managedLedgerOffloadThresholdInBytes = 1073741824
    managedLedgerDataReadPriority = "tiered-storage-first"
    managedLedgerMaxEntriesPerLedger = 50000

Unknown keys are an error with a suggestion; values are type-checked.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..hooks import Transform
from ..leftovers import DEFAULT_GRACE_SECONDS
from ..plugins import default_plugin_manager
from .hot.ledger_file import FsyncPolicy
from .lifecycle.filesystem_offload import LOCAL_DIRECTORY
from .lifecycle.policies import OffloadPolicies, ReadPriority, validate_policies

__all__ = ["DEFAULT_POLICIES", "BrokerConfig", "load_config", "parse_config"]

#: Defaults as in Pulsar, except that retention is unlimited (-1) and the
#: driver is the embedded local-directory store, so nothing is deleted or
#: sent anywhere unless configured.
DEFAULT_POLICIES = OffloadPolicies(
    read_priority=ReadPriority.OFFLOADED_FIRST,
    offload_threshold_bytes=-1,
    offload_threshold_seconds=-1,
    deletion_lag_ms=4 * 3600 * 1000,
    driver=LOCAL_DIRECTORY,
    bucket=None,
    endpoint=None,
    region=None,
    max_block_size=64 * 2**20,
    read_buffer_size=2**20,
    retention_time_minutes=-1,
    retention_size_mb=-1,
    streaming_enabled=False,
    segment_max_size_mb=1024,
    segment_rollover_minutes=600,
    streaming_buffer_bytes=128 * 2**20,
)


@dataclass(frozen=True)
class BrokerConfig:
    """Everything the embedded broker reads from its config file."""

    policies: OffloadPolicies = DEFAULT_POLICIES
    max_entries_per_ledger: int = 50000
    max_size_per_ledger_mb: int = 2048
    max_ledger_rollover_minutes: int = 240
    fsync_policy: FsyncPolicy = FsyncPolicy.BATCH
    maintenance_interval_seconds: int = 120
    leftover_grace_seconds: int = int(DEFAULT_GRACE_SECONDS)
    offload_worker_processes: int = 1
    entry_offsets: bool = True
    read_ahead_bytes: int = 256 * 2**20
    read_ahead_bytes_per_reader: int = 64 * 2**20
    read_ahead_range_bytes: int = 16 * 2**20
    metrics_port: int | None = None
    source: str = field(default="(defaults)", compare=False)


def _integer(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key} must be an integer, got {value!r}")
    return value


def _text(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r}")
    return value


def _boolean(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r}")
    return value


def _not_negative(key: str, value: Any) -> int:
    number = _integer(key, value)
    if number < 0:
        raise ConfigError(f"{key} must not be negative, got {number}")
    return number


def _positive(key: str, value: Any) -> int:
    number = _integer(key, value)
    if number <= 0:
        raise ConfigError(f"{key} must be positive, got {number}")
    return number


# key -> (where it goes, field, parser)
_KEYS: dict[str, tuple[str, str, Callable[[str, Any], Any]]] = {
    "managedLedgerOffloadDriver": ("policies", "driver", _text),
    "managedLedgerOffloadBucket": ("policies", "bucket", _text),
    "managedLedgerOffloadServiceEndpoint": ("policies", "endpoint", _text),
    "managedLedgerOffloadRegion": ("policies", "region", _text),
    # Pulsar's file-system offloader (managedLedgerOffloadDriver = "filesystem").
    "fileSystemURI": ("policies", "file_system_uri", _text),
    "fileSystemProfilePath": ("policies", "file_system_profile_path", _text),
    "managedLedgerOffloadMaxBlockSizeInBytes": ("policies", "max_block_size", _positive),
    "managedLedgerOffloadReadBufferSizeInBytes": ("policies", "read_buffer_size", _positive),
    "managedLedgerOffloadThresholdInBytes": ("policies", "offload_threshold_bytes", _integer),
    "managedLedgerOffloadThresholdInSeconds": ("policies", "offload_threshold_seconds", _integer),
    "managedLedgerOffloadDeletionLagMs": ("policies", "deletion_lag_ms", _integer),
    "managedLedgerDataReadPriority": ("policies", "read_priority", lambda k, v: ReadPriority.parse(_text(k, v))),
    "defaultRetentionTimeInMinutes": ("policies", "retention_time_minutes", _integer),
    "defaultRetentionSizeInMB": ("policies", "retention_size_mb", _integer),
    # PIP-76 streaming offload (the enabling key's name is ours; PIP-76 leaves it open).
    "managedLedgerOffloadStreamingEnabled": ("policies", "streaming_enabled", _boolean),
    "maxSizePerOffloadSegmentMbytes": ("policies", "segment_max_size_mb", _positive),
    "maxOffloadSegmentRolloverTimeMinutes": ("policies", "segment_rollover_minutes", _positive),
    "managedLedgerOffloadStreamingBufferSizeInBytes": ("policies", "streaming_buffer_bytes", _positive),
    # Ours: chunk transforms of offloaded objects, in order (e.g. "zstd,crc32c"), and their chunk size.
    "managedLedgerOffloadTransforms": ("policies", "transforms", _text),
    "managedLedgerOffloadTransformChunkSizeInBytes": ("policies", "transform_chunk_size", _positive),
    # Pulsar's legacy S3-only names, still accepted by Pulsar brokers.
    "s3ManagedLedgerOffloadBucket": ("policies", "bucket", _text),
    "s3ManagedLedgerOffloadRegion": ("policies", "region", _text),
    "s3ManagedLedgerOffloadServiceEndpoint": ("policies", "endpoint", _text),
    "s3ManagedLedgerOffloadMaxBlockSizeInBytes": ("policies", "max_block_size", _positive),
    "s3ManagedLedgerOffloadReadBufferSizeInBytes": ("policies", "read_buffer_size", _positive),
    "managedLedgerMaxEntriesPerLedger": ("broker", "max_entries_per_ledger", _positive),
    "managedLedgerMaxSizePerLedgerMbytes": ("broker", "max_size_per_ledger_mb", _positive),
    "managedLedgerMaxLedgerRolloverTimeMinutes": ("broker", "max_ledger_rollover_minutes", _positive),
    "managedLedgerFsyncPolicy": ("broker", "fsync_policy", lambda k, v: FsyncPolicy.parse(_text(k, v))),
    # Pulsar's retention check period; here every periodic duty runs on it (0: none, call run_maintenance).
    "retentionCheckIntervalInSeconds": ("broker", "maintenance_interval_seconds", _not_negative),
    # Ours: how old a temporary file of a writer not known to be dead must be before maintenance removes it.
    "managedLedgerOffloadLeftoverGraceSeconds": ("broker", "leftover_grace_seconds", _positive),
    # Ours: processes that write whole-ledger offloads (0: the broker's own threads do).
    "managedLedgerOffloadWorkerProcesses": ("broker", "offload_worker_processes", _not_negative),
    # Ours: the entry-offsets section (one GET per cold random read; off: objects byte for byte as Pulsar's).
    "managedLedgerOffloadEntryOffsetsEnabled": ("broker", "entry_offsets", _boolean),
    # Ours: read-ahead of offloaded data for catch-up readers, bounded for the whole broker and per reader.
    "managedLedgerOffloadReadAheadBytes": ("broker", "read_ahead_bytes", _positive),
    "managedLedgerOffloadReadAheadBytesPerReader": ("broker", "read_ahead_bytes_per_reader", _positive),
    "managedLedgerOffloadReadAheadRangeBytes": ("broker", "read_ahead_range_bytes", _positive),
    # Ours: serve the metrics plugin's /metrics on 127.0.0.1:PORT (0: any free port; absent: not served).
    "managedLedgerOffloadMetricsPort": ("broker", "metrics_port", _not_negative),
}


def parse_config(
    values: Mapping[str, Any], *, source: str = "(inline)", transform: Callable[..., Transform] | None = None
) -> BrokerConfig:
    """Build a :class:`BrokerConfig` from a flat mapping of Pulsar keys.

    Raises :class:`ConfigError` naming the key for unknown keys (with the
    closest known one), wrong types, policies that contradict each other or
    are out of range, and chunk transforms that ``transform``
    (:meth:`PluginManager.transform`; by default the one of
    :func:`default_plugin_manager`) does not resolve (see
    :func:`validate_policies`)."""
    policies: dict[str, Any] = {}
    broker: dict[str, Any] = {}
    for key, value in values.items():
        if key not in _KEYS:
            close = difflib.get_close_matches(key, list(_KEYS), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(_KEYS))}"
            raise ConfigError(f"unknown configuration key {key!r} in {source}{hint}")
        where, name, parse = _KEYS[key]
        (policies if where == "policies" else broker)[name] = parse(key, value)
    merged = OffloadPolicies(**policies).over(DEFAULT_POLICIES)
    if transform is None and merged.transforms:
        transform = default_plugin_manager().transform
    validate_policies(merged, transform=transform)
    config = BrokerConfig(policies=merged, source=source, **broker)
    if config.read_ahead_bytes_per_reader < config.read_ahead_range_bytes:
        raise ConfigError(
            f"managedLedgerOffloadReadAheadBytesPerReader ({config.read_ahead_bytes_per_reader}) is below one range "
            f"(managedLedgerOffloadReadAheadRangeBytes, {config.read_ahead_range_bytes}) in {source}; raise it"
        )
    return config


def load_config(path: str | Path | None, *, transform: Callable[..., Transform] | None = None) -> BrokerConfig:
    """Read a TOML config file; ``None`` gives the defaults.

    Raises :class:`ConfigError` for a missing or malformed file, and for
    the values :func:`parse_config` refuses (``transform`` as there)."""
    if path is None:
        return BrokerConfig()
    file = Path(path)
    try:
        values = tomllib.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {file} does not exist; create it or drop --config") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {file} is not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})"
        ) from None
    except OSError as exc:
        raise ConfigError(f"config file {file} cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {file} is not valid TOML: {exc}") from exc
    nested = [key for key, value in values.items() if isinstance(value, dict)]
    if nested:
        raise ConfigError(f"config file {file} has tables {nested}; keys are flat, as in Pulsar's broker.conf")
    return parse_config(values, source=str(file), transform=transform)
