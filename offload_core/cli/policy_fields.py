"""What the policy verbs share: the offload settings they manage and the
label each prints under, how a level's settings are shown (each value
with the level it comes from, secrets masked), and the checks and
parsing of the options more than one verb takes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ..errors import mask_secrets
from .units import parse_size

# The broker loads when a verb opens it, not to parse the options.
if TYPE_CHECKING:
    from ..managed_ledger import Broker

__all__ = [
    "OFFLOAD_FIELDS",
    "STREAMING_FIELDS",
    "TRANSFORMS_HELP",
    "TRANSFORM_FIELDS",
    "check_driver",
    "check_file_system",
    "show_policies",
    "transform_changes",
]

# The offload settings these verbs manage, with the label each prints under.
OFFLOAD_FIELDS: dict[str, str] = {
    "driver": "driver",
    "bucket": "bucket",
    "region": "region",
    "endpoint": "endpoint",
    "file_system_uri": "file system URI (fileSystemURI)",
    "file_system_profile_path": "Hadoop profile (fileSystemProfilePath)",
    "max_block_size": "max block size (bytes)",
    "read_buffer_size": "read buffer size (bytes)",
    "offload_threshold_bytes": "offload threshold (bytes; -1: off)",
    "offload_threshold_seconds": "offload threshold (seconds; -1: off)",
    "deletion_lag_ms": "deletion lag (ms)",
    "read_priority": "offloaded read priority",
    "streaming_enabled": "streaming offload (PIP-76)",
    "segment_max_size_mb": "max segment size (MB)",
    "segment_rollover_minutes": "segment rollover time (minutes)",
    "streaming_buffer_bytes": "streaming buffer (bytes)",
    "transforms": "chunk transforms",
    "transform_chunk_size": "transform chunk size (bytes)",
}
STREAMING_FIELDS = ["streaming_enabled", "segment_max_size_mb", "segment_rollover_minutes", "streaming_buffer_bytes"]
TRANSFORM_FIELDS = ["transforms", "transform_chunk_size"]


def _printable(value: Any) -> Any:
    from ..managed_ledger import ReadPriority

    return value.name if isinstance(value, ReadPriority) else value


def check_driver(broker: Broker, driver: str | None) -> None:
    if driver is None:
        return
    if "://" in driver:
        broker.plugins.driver_for_scheme(driver.partition("://")[0])
    else:
        broker.plugins.driver(driver)  # raises DriverNotInstalledError naming what to install


def check_file_system(uri: str | None, profile: str | None) -> None:
    """Refuse, before anything is stored, a ``fileSystemURI`` that names
    neither a local nor an HDFS file system and a profile that is missing
    or not Hadoop XML (:class:`ConfigError` naming it)."""
    from ..offload.mapfile.hadoop_profile import read_profile, storage_url

    if uri is not None:
        storage_url(uri, "/")
    if profile is not None:
        read_profile(profile)


def show_policies(broker: Broker, level: str, name: str, fields: list[str], as_json: bool) -> None:
    sources = broker.policies.sources(level, name)
    # An endpoint or driver URL may carry credentials (user:password@, a signed query).
    values = mask_secrets({field: _printable(sources[field][0]) for field in fields})
    rows = {field: {"value": values[field], "from": sources[field][1]} for field in fields}
    if as_json:
        click.echo(json.dumps({level: name, "policies": rows}))
        return
    for field in fields:
        value, source = rows[field]["value"], rows[field]["from"]
        click.echo(f"{OFFLOAD_FIELDS[field]:<38} {'-' if value is None else value!s:<28} ({source})")


TRANSFORMS_HELP = 'Chunk transforms of new offloads, in order, e.g. zstd,aes-gcm,crc32c; "" for none.'


def transform_changes(transforms: str | None, chunk_size: str | None) -> dict[str, Any]:
    """The policy fields ``--transforms`` and ``--transform-chunk-size`` set
    (names are checked against the installed plugins when stored)."""
    changes: dict[str, Any] = {}
    if transforms is not None:
        changes["transforms"] = ",".join(name.strip() for name in transforms.split(",") if name.strip())
    if chunk_size is not None:
        changes["transform_chunk_size"] = parse_size(chunk_size, what="--transform-chunk-size")
    return changes
