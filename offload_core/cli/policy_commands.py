"""pulsar-admin's offload-policy verbs, for namespaces and topics.

``set-offload-policies`` / ``get-offload-policies`` /
``remove-offload-policies`` and the single-setting shortcuts
(``set-offload-threshold``, ``set-offload-deletion-lag`` and their ``get-``
and ``remove-``), with Pulsar's size and duration syntax (``10M``, ``4h``),
``set-`` / ``get-`` / ``remove-tiered-read-priority``, and ``set-`` / ``get-`` /
``remove-offload-streaming`` for PIP-76 streaming offload, and ``set-`` /
``get-`` / ``remove-offload-transforms`` for chunk transforms (ours).
``get`` shows each effective value and the level it comes from.
``--file-system-uri`` / ``--file-system-profile-path`` set what Pulsar's
offload policies hold as ``fileSystemURI`` / ``fileSystemProfilePath`` for
its file-system offloader (pulsar-admin's ``set-offload-policies`` has no
flag for them: there they are set through the admin REST API's policies).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from ..errors import mask_secrets
from ..managed_ledger import Broker, ReadPriority
from ..managed_ledger.lifecycle.policies import TopicName, parse_namespace
from ..offload.mapfile.hadoop_profile import read_profile, storage_url
from .broker_options import broker_options, opened
from .options import READ_PRIORITIES
from .topic_commands import namespaces, topics
from .units import parse_duration_ms, parse_size

__all__: list[str] = []

# The offload settings these verbs manage, with the label each prints under.
_OFFLOAD_FIELDS: dict[str, str] = {
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
_STREAMING_FIELDS = ["streaming_enabled", "segment_max_size_mb", "segment_rollover_minutes", "streaming_buffer_bytes"]
_TRANSFORM_FIELDS = ["transforms", "transform_chunk_size"]


def _printable(value: Any) -> Any:
    return value.name if isinstance(value, ReadPriority) else value


def _check_driver(broker: Broker, driver: str | None) -> None:
    if driver is None:
        return
    if "://" in driver:
        broker.plugins.driver_for_scheme(driver.partition("://")[0])
    else:
        broker.plugins.driver(driver)  # raises DriverNotInstalledError naming what to install


def _check_file_system(uri: str | None, profile: str | None) -> None:
    """Refuse, before anything is stored, a ``fileSystemURI`` that names
    neither a local nor an HDFS file system and a profile that is missing
    or not Hadoop XML (:class:`ConfigError` naming it)."""
    if uri is not None:
        storage_url(uri, "/")
    if profile is not None:
        read_profile(profile)


def _show(broker: Broker, level: str, name: str, fields: list[str], as_json: bool) -> None:
    sources = broker.policies.sources(level, name)
    # An endpoint or driver URL may carry credentials (user:password@, a signed query).
    values = mask_secrets({field: _printable(sources[field][0]) for field in fields})
    rows = {field: {"value": values[field], "from": sources[field][1]} for field in fields}
    if as_json:
        click.echo(json.dumps({level: name, "policies": rows}))
        return
    for field in fields:
        value, source = rows[field]["value"], rows[field]["from"]
        click.echo(f"{_OFFLOAD_FIELDS[field]:<38} {'-' if value is None else value!s:<28} ({source})")


_TRANSFORMS_HELP = 'Chunk transforms of new offloads, in order, e.g. zstd,aes-gcm,crc32c; "" for none.'


def _transform_changes(transforms: str | None, chunk_size: str | None) -> dict[str, Any]:
    """The policy fields ``--transforms`` and ``--transform-chunk-size`` set
    (names are checked against the installed plugins when stored)."""
    changes: dict[str, Any] = {}
    if transforms is not None:
        changes["transforms"] = ",".join(name.strip() for name in transforms.split(",") if name.strip())
    if chunk_size is not None:
        changes["transform_chunk_size"] = parse_size(chunk_size, what="--transform-chunk-size")
    return changes


def _policy_commands(group: click.Group, level: str, parse_name: Callable[[str], str]) -> None:
    label = level.upper()

    @group.command("set-offload-policies", help=f"Set offload policies on {label} (only the options given).")
    @click.argument("name", metavar=label)
    @click.option("-d", "--driver", default=None, help="Storage driver (name, Pulsar alias or URL).")
    @click.option("-b", "--bucket", default=None)
    @click.option("-r", "--region", default=None)
    @click.option("-e", "--endpoint", default=None)
    @click.option(
        "--file-system-uri",
        default=None,
        help="fileSystemURI of the file-system offloader (-d filesystem): file:///... or hdfs://host:port.",
    )
    @click.option(
        "--file-system-profile-path",
        default=None,
        help="fileSystemProfilePath: its Hadoop XML profile(s), comma-separated, later ones winning.",
    )
    @click.option("--max-block-size", default=None, help="e.g. 64M")
    @click.option("--read-buffer-size", default=None, help="e.g. 1M")
    @click.option(
        "--offload-after-threshold", default=None, help="Hot-tier size that triggers offload, e.g. 10G; -1: off."
    )
    @click.option("--offload-after-elapsed", default=None, help="Age that triggers offload, e.g. 4h; -1: off.")
    @click.option("--offload-deletion-lag", default=None, help="Delete the hot copy this long after offload, e.g. 4h.")
    @click.option("--offloaded-read-priority", default=None, metavar="PRIORITY", help=f"One of: {READ_PRIORITIES}.")
    @click.option("--transforms", default=None, help=_TRANSFORMS_HELP)
    @click.option("--transform-chunk-size", default=None, help="Logical bytes per transformed chunk, e.g. 1M.")
    @broker_options
    def set_policies(
        name: str,
        driver: str | None,
        bucket: str | None,
        region: str | None,
        endpoint: str | None,
        file_system_uri: str | None,
        file_system_profile_path: str | None,
        max_block_size: str | None,
        read_buffer_size: str | None,
        offload_after_threshold: str | None,
        offload_after_elapsed: str | None,
        offload_deletion_lag: str | None,
        offloaded_read_priority: str | None,
        transforms: str | None,
        transform_chunk_size: str | None,
        data_dir: str,
        config_path: str | None,
    ) -> None:
        changes: dict[str, Any] = _transform_changes(transforms, transform_chunk_size) | {
            key: value
            for key, value in (
                ("driver", driver),
                ("bucket", bucket),
                ("region", region),
                ("endpoint", endpoint),
                ("file_system_uri", file_system_uri),
                ("file_system_profile_path", file_system_profile_path),
            )
            if value is not None
        }
        if max_block_size is not None:
            changes["max_block_size"] = parse_size(max_block_size, what="--max-block-size")
        if read_buffer_size is not None:
            changes["read_buffer_size"] = parse_size(read_buffer_size, what="--read-buffer-size")
        if offload_after_threshold is not None:
            changes["offload_threshold_bytes"] = parse_size(offload_after_threshold, what="--offload-after-threshold",
                                                            allow_off=True)  # fmt: skip
        if offload_after_elapsed is not None:
            elapsed = parse_duration_ms(offload_after_elapsed, what="--offload-after-elapsed", allow_off=True)
            changes["offload_threshold_seconds"] = elapsed if elapsed < 0 else elapsed // 1000
        if offload_deletion_lag is not None:
            changes["deletion_lag_ms"] = parse_duration_ms(offload_deletion_lag, what="--offload-deletion-lag")
        if offloaded_read_priority is not None:
            changes["read_priority"] = ReadPriority.parse(offloaded_read_priority)
        if not changes:
            raise click.UsageError("give at least one policy option (see --help)")
        _check_file_system(file_system_uri, file_system_profile_path)
        with opened(data_dir, config_path) as broker:
            _check_driver(broker, changes.get("driver"))
            key = parse_name(name)
            broker.policies.update(level, key, **changes)
            _show(broker, level, key, [field for field in _OFFLOAD_FIELDS if field in changes], as_json=False)

    @group.command("get-offload-policies", help=f"Show the effective offload policies of {label} and their levels.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_policies(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            _show(broker, level, parse_name(name), list(_OFFLOAD_FIELDS), as_json)

    @group.command("remove-offload-policies", help=f"Remove every offload policy set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_policies(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), **dict.fromkeys(_OFFLOAD_FIELDS))
            click.echo(f"{level} {name}: offload policies removed")

    @group.command("set-offload-threshold", help=f"Set the offload thresholds of {label}.")
    @click.argument("name", metavar=label)
    @click.option("-s", "--size", default=None, help="Hot-tier size that triggers offload, e.g. 10M; -1: off.")
    @click.option("-t", "--time", "elapsed", default=None, help="Age that triggers offload, e.g. 4h; -1: off.")
    @broker_options
    def set_threshold(name: str, size: str | None, elapsed: str | None, data_dir: str, config_path: str | None) -> None:
        if size is None and elapsed is None:
            raise click.UsageError("give --size and/or --time")
        changes: dict[str, Any] = {}
        if size is not None:
            changes["offload_threshold_bytes"] = parse_size(size, what="--size", allow_off=True)
        if elapsed is not None:
            milliseconds = parse_duration_ms(elapsed, what="--time", allow_off=True)
            changes["offload_threshold_seconds"] = milliseconds if milliseconds < 0 else milliseconds // 1000
        with opened(data_dir, config_path) as broker:
            key = parse_name(name)
            broker.policies.update(level, key, **changes)
            _show(broker, level, key, list(changes), as_json=False)

    @group.command("get-offload-threshold", help=f"Show the offload thresholds of {label} and their levels.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_threshold(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            _show(broker, level, parse_name(name), ["offload_threshold_bytes", "offload_threshold_seconds"], as_json)

    @group.command("remove-offload-threshold", help=f"Remove the offload thresholds set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_threshold(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), offload_threshold_bytes=None,
                                   offload_threshold_seconds=None)  # fmt: skip
            click.echo(f"{level} {name}: offload thresholds removed")

    @group.command("set-offload-deletion-lag", help=f"Set the offload deletion lag of {label}.")
    @click.argument("name", metavar=label)
    @click.option("-l", "--lag", required=True, help="e.g. 4h, 10m, 0 (delete right after offload).")
    @broker_options
    def set_lag(name: str, lag: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            key = parse_name(name)
            broker.policies.update(level, key, deletion_lag_ms=parse_duration_ms(lag, what="--lag"))
            _show(broker, level, key, ["deletion_lag_ms"], as_json=False)

    @group.command("get-offload-deletion-lag", help=f"Show the offload deletion lag of {label} and its level.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_lag(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            _show(broker, level, parse_name(name), ["deletion_lag_ms"], as_json)

    @group.command("remove-offload-deletion-lag", help=f"Remove the offload deletion lag set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_lag(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), deletion_lag_ms=None)
            click.echo(f"{level} {name}: offload deletion lag removed")


def _priority_commands(group: click.Group, level: str, parse_name: Callable[[str], str]) -> None:
    """``set-``, ``get-`` and ``remove-tiered-read-priority`` for one policy level."""
    label = level.upper()

    @group.command("set-tiered-read-priority", help=f"Set the tiered read priority of {label}: {READ_PRIORITIES}.")
    @click.argument("name", metavar=label)
    @click.argument("priority", metavar="PRIORITY")
    @broker_options
    def set_priority(name: str, priority: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            chosen = ReadPriority.parse(priority)
            broker.policies.update(level, parse_name(name), read_priority=chosen)
            click.echo(f"{level} {name}: tiered read priority {chosen.name}")

    @group.command("get-tiered-read-priority", help=f"Show the tiered read priority set on {label}.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_priority(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            key = parse_name(name)
            own = broker.policies.get(level, key).read_priority
            if level == "topic":
                effective = broker.policies.effective(TopicName.parse(key)).read_priority
            else:
                effective = own or broker.config.policies.read_priority
            assert effective is not None
            if as_json:
                click.echo(json.dumps({level: key, "set": own.name if own else None, "effective": effective.name}))
            else:
                click.echo(f"set on {level}: {own.name if own else '(not set)'}; effective: {effective.name}")

    @group.command("remove-tiered-read-priority", help=f"Remove the tiered read priority set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_priority(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), read_priority=None)
            click.echo(f"{level} {name}: tiered read priority removed")


def _streaming_commands(group: click.Group, level: str, parse_name: Callable[[str], str]) -> None:
    """``set-``, ``get-`` and ``remove-offload-streaming`` for one policy level."""
    label = level.upper()

    @group.command("set-offload-streaming", help=f"Turn streaming offload (PIP-76) on or off for {label}, "
                   "and set its segment limits.")  # fmt: skip
    @click.argument("name", metavar=label)
    @click.option("--enable/--disable", "enabled", default=None, help="Stream entries as they are written.")
    @click.option("--max-segment-size", default=None, help="Close a segment at this size, e.g. 1G.")
    @click.option("--max-segment-rollover", default=None, help="Close a segment at this age, e.g. 10h.")
    @click.option("--buffer-size", default=None, help="Bytes held for the upload at most, e.g. 128M.")
    @broker_options
    def set_streaming(
        name: str,
        enabled: bool | None,
        max_segment_size: str | None,
        max_segment_rollover: str | None,
        buffer_size: str | None,
        data_dir: str,
        config_path: str | None,
    ) -> None:
        changes: dict[str, Any] = {}
        if enabled is not None:
            changes["streaming_enabled"] = enabled
        if max_segment_size is not None:
            size = parse_size(max_segment_size, what="--max-segment-size")
            changes["segment_max_size_mb"] = max(1, -(-size // 2**20))
        if max_segment_rollover is not None:
            minutes = parse_duration_ms(max_segment_rollover, what="--max-segment-rollover") // 60000
            if minutes < 1:
                raise click.BadParameter("the rollover time is at least 1 minute", param_hint="--max-segment-rollover")
            changes["segment_rollover_minutes"] = minutes
        if buffer_size is not None:
            changes["streaming_buffer_bytes"] = parse_size(buffer_size, what="--buffer-size")
        if not changes:
            raise click.UsageError("give --enable or --disable and/or a segment limit (see --help)")
        with opened(data_dir, config_path) as broker:
            key = parse_name(name)
            broker.policies.update(level, key, **changes)
            _show(broker, level, key, list(changes), as_json=False)

    @group.command("get-offload-streaming", help=f"Show the streaming offload settings of {label} and their levels.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_streaming(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            _show(broker, level, parse_name(name), _STREAMING_FIELDS, as_json)

    @group.command("remove-offload-streaming", help=f"Remove the streaming offload settings set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_streaming(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), **dict.fromkeys(_STREAMING_FIELDS))
            click.echo(f"{level} {name}: streaming offload settings removed")


def _transform_commands(group: click.Group, level: str, parse_name: Callable[[str], str]) -> None:
    """``set-``, ``get-`` and ``remove-offload-transforms`` for one policy level."""
    label = level.upper()

    @group.command("set-offload-transforms", help=f"Set the chunk transforms of {label}'s new offloads "
                   "(objects already written keep theirs and stay readable).")  # fmt: skip
    @click.argument("name", metavar=label)
    @click.argument("transforms", metavar="TRANSFORMS")
    @click.option("--chunk-size", default=None, help="Logical bytes per transformed chunk, e.g. 1M.")
    @broker_options
    def set_transforms(name: str, transforms: str, chunk_size: str | None, data_dir: str,
                       config_path: str | None) -> None:  # fmt: skip
        with opened(data_dir, config_path) as broker:
            key = parse_name(name)
            changes = _transform_changes(transforms, chunk_size)
            broker.policies.update(level, key, **changes)
            _show(broker, level, key, list(changes), as_json=False)

    @group.command("get-offload-transforms", help=f"Show the chunk transforms of {label} and their levels.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_transforms(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            _show(broker, level, parse_name(name), _TRANSFORM_FIELDS, as_json)

    @group.command("remove-offload-transforms", help=f"Remove the chunk transforms set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_transforms(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), **dict.fromkeys(_TRANSFORM_FIELDS))
            click.echo(f"{level} {name}: chunk transforms removed")


_policy_commands(topics, "topic", lambda name: str(TopicName.parse(name)))
_policy_commands(namespaces, "namespace", parse_namespace)
_priority_commands(topics, "topic", lambda name: str(TopicName.parse(name)))
_priority_commands(namespaces, "namespace", parse_namespace)
_streaming_commands(topics, "topic", lambda name: str(TopicName.parse(name)))
_streaming_commands(namespaces, "namespace", parse_namespace)
_transform_commands(topics, "topic", lambda name: str(TopicName.parse(name)))
_transform_commands(namespaces, "namespace", parse_namespace)
