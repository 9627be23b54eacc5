"""The policy verbs of one feature each, for namespaces and topics:
``set-`` / ``get-`` / ``remove-tiered-read-priority``, ``-offload-streaming``
(PIP-76 streaming offload) and ``-offload-transforms`` (chunk transforms,
ours). :mod:`offload_core.cli.policy_commands` adds them to its groups."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from .broker_options import broker_options, opened
from .options import READ_PRIORITIES
from .policy_fields import STREAMING_FIELDS, TRANSFORM_FIELDS, show_policies, transform_changes
from .units import parse_duration_ms, parse_size

__all__ = ["priority_commands", "streaming_commands", "transform_commands"]


def priority_commands(group: click.Group, level: str, parse_name: Callable[[str], str]) -> None:
    """``set-``, ``get-`` and ``remove-tiered-read-priority`` for one policy level."""
    label = level.upper()

    @group.command("set-tiered-read-priority", help=f"Set the tiered read priority of {label}: {READ_PRIORITIES}.")
    @click.argument("name", metavar=label)
    @click.argument("priority", metavar="PRIORITY")
    @broker_options
    def set_priority(name: str, priority: str, data_dir: str, config_path: str | None) -> None:
        from ..managed_ledger import ReadPriority

        with opened(data_dir, config_path) as broker:
            chosen = ReadPriority.parse(priority)
            broker.policies.update(level, parse_name(name), read_priority=chosen)
            click.echo(f"{level} {name}: tiered read priority {chosen.name}")

    @group.command("get-tiered-read-priority", help=f"Show the tiered read priority set on {label}.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_priority(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        from ..managed_ledger import TopicName

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


def streaming_commands(group: click.Group, level: str, parse_name: Callable[[str], str]) -> None:
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
            show_policies(broker, level, key, list(changes), as_json=False)

    @group.command("get-offload-streaming", help=f"Show the streaming offload settings of {label} and their levels.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_streaming(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            show_policies(broker, level, parse_name(name), STREAMING_FIELDS, as_json)

    @group.command("remove-offload-streaming", help=f"Remove the streaming offload settings set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_streaming(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), **dict.fromkeys(STREAMING_FIELDS))
            click.echo(f"{level} {name}: streaming offload settings removed")


def transform_commands(group: click.Group, level: str, parse_name: Callable[[str], str]) -> None:
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
            changes = transform_changes(transforms, chunk_size)
            broker.policies.update(level, key, **changes)
            show_policies(broker, level, key, list(changes), as_json=False)

    @group.command("get-offload-transforms", help=f"Show the chunk transforms of {label} and their levels.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_transforms(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            show_policies(broker, level, parse_name(name), TRANSFORM_FIELDS, as_json)

    @group.command("remove-offload-transforms", help=f"Remove the chunk transforms set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_transforms(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), **dict.fromkeys(TRANSFORM_FIELDS))
            click.echo(f"{level} {name}: chunk transforms removed")
