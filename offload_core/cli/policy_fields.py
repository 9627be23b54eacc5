"""The offload settings the policy verbs manage: each one's label, how its
command-line text is read (Pulsar's size and duration syntax), how a
level's settings are shown (each value with the level it comes from,
secrets masked), and the checks a setting needs before it is stored."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from ..errors import mask_secrets
from .units import parse_duration_ms, parse_size

# The broker loads when a verb opens it, not to parse the options.
if TYPE_CHECKING:
    from ..managed_ledger import Broker, ReadPriority

__all__ = [
    "FIELDS",
    "STREAMING_FIELDS",
    "TRANSFORM_FIELDS",
    "PolicyField",
    "check_driver",
    "check_file_system",
    "show_policies",
]


@dataclass(frozen=True)
class PolicyField:
    """One offload setting: the label it prints under and how an option's
    value becomes the policy's (``what`` names the option in errors)."""

    label: str
    read: Callable[[Any, str], Any]


def _text(value: str, _what: str) -> str:
    return value


def _size(value: str, what: str) -> int:
    return parse_size(value, what=what)


def _threshold_bytes(value: str, what: str) -> int:
    return parse_size(value, what=what, allow_off=True)


def _threshold_seconds(value: str, what: str) -> int:
    elapsed = parse_duration_ms(value, what=what, allow_off=True)
    return elapsed if elapsed < 0 else elapsed // 1000


def _duration_ms(value: str, what: str) -> int:
    return parse_duration_ms(value, what=what)


def _priority(value: str, _what: str) -> ReadPriority:
    from ..managed_ledger import ReadPriority

    return ReadPriority.parse(value)


def _flag(value: bool, _what: str) -> bool:
    return value


def _megabytes(value: str, what: str) -> int:
    """Whole MB, rounded up (Pulsar's ``maxSizePerOffloadSegmentMbytes``)."""
    return max(1, -(-parse_size(value, what=what) // 2**20))


def _minutes(value: str, what: str) -> int:
    minutes = parse_duration_ms(value, what=what) // 60000
    if minutes < 1:
        raise click.BadParameter("the rollover time is at least 1 minute", param_hint=what)
    return minutes


def _transforms(value: str, _what: str) -> str:
    """Names are checked against the installed plugins when stored."""
    return ",".join(name.strip() for name in value.split(",") if name.strip())


# Every setting the verbs manage, in the order they are shown.
FIELDS: dict[str, PolicyField] = {
    "driver": PolicyField("driver", _text),
    "bucket": PolicyField("bucket", _text),
    "region": PolicyField("region", _text),
    "endpoint": PolicyField("endpoint", _text),
    "file_system_uri": PolicyField("file system URI (fileSystemURI)", _text),
    "file_system_profile_path": PolicyField("Hadoop profile (fileSystemProfilePath)", _text),
    "max_block_size": PolicyField("max block size (bytes)", _size),
    "read_buffer_size": PolicyField("read buffer size (bytes)", _size),
    "offload_threshold_bytes": PolicyField("offload threshold (bytes; -1: off)", _threshold_bytes),
    "offload_threshold_seconds": PolicyField("offload threshold (seconds; -1: off)", _threshold_seconds),
    "deletion_lag_ms": PolicyField("deletion lag (ms)", _duration_ms),
    "read_priority": PolicyField("offloaded read priority", _priority),
    "streaming_enabled": PolicyField("streaming offload (PIP-76)", _flag),
    "segment_max_size_mb": PolicyField("max segment size (MB)", _megabytes),
    "segment_rollover_minutes": PolicyField("segment rollover time (minutes)", _minutes),
    "streaming_buffer_bytes": PolicyField("streaming buffer (bytes)", _size),
    "transforms": PolicyField("chunk transforms", _transforms),
    "transform_chunk_size": PolicyField("transform chunk size (bytes)", _size),
}
STREAMING_FIELDS = ("streaming_enabled", "segment_max_size_mb", "segment_rollover_minutes", "streaming_buffer_bytes")
TRANSFORM_FIELDS = ("transforms", "transform_chunk_size")


def _printable(value: Any) -> Any:
    from ..managed_ledger import ReadPriority

    return value.name if isinstance(value, ReadPriority) else value


def check_file_system(changes: dict[str, Any]) -> None:
    """Refuse, before anything is stored, a ``fileSystemURI`` that names
    neither a local nor an HDFS file system and a profile that is missing
    or not Hadoop XML (:class:`ConfigError` naming it)."""
    from ..offload.mapfile.hadoop_profile import read_profile, storage_url

    if (uri := changes.get("file_system_uri")) is not None:
        storage_url(uri, "/")
    if (profile := changes.get("file_system_profile_path")) is not None:
        read_profile(profile)


def check_driver(broker: Broker, driver: str | None) -> None:
    """:class:`DriverNotInstalledError` naming what to install for a driver
    (a name, a Pulsar alias or a URL) no installed plugin provides."""
    if driver is None:
        return
    if "://" in driver:
        broker.plugins.driver_for_scheme(driver.partition("://")[0])
    else:
        broker.plugins.driver(driver)


def show_policies(broker: Broker, level: str, name: str, fields: list[str], as_json: bool) -> None:
    """Each of ``fields`` with the level it comes from; a bucket set nowhere
    shows the one the broker would use, as the other defaults do."""
    from ..managed_ledger.lifecycle.offloaders import default_bucket

    sources = broker.policies.sources(level, name)
    if sources["bucket"][0] is None:
        sources["bucket"] = (default_bucket(sources["driver"][0], broker.data_dir), sources["bucket"][1])
    # An endpoint or driver URL may carry credentials (user:password@, a signed query).
    values = mask_secrets({field: _printable(sources[field][0]) for field in fields})
    rows = {field: {"value": values[field], "from": sources[field][1]} for field in fields}
    if as_json:
        click.echo(json.dumps({level: name, "policies": rows}))
        return
    for field in fields:
        value, source = rows[field]["value"], rows[field]["from"]
        click.echo(f"{FIELDS[field].label:<38} {'-' if value is None else value!s:<28} ({source})")
