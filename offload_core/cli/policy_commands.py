"""pulsar-admin's offload-policy verbs, for namespaces and topics.

``set-offload-policies`` / ``get-offload-policies`` /
``remove-offload-policies`` and the single-setting shortcuts
(``set-offload-threshold``, ``set-offload-deletion-lag`` and their ``get-``
and ``remove-``), with Pulsar's size and duration syntax (``10M``, ``4h``);
the verbs of one feature each (tiered read priority, PIP-76 streaming,
chunk transforms) are in :mod:`offload_core.cli.policy_feature_commands`,
added to the same groups here. ``get`` shows each effective value and the
level it comes from. ``--file-system-uri`` / ``--file-system-profile-path``
set what Pulsar's offload policies hold as ``fileSystemURI`` /
``fileSystemProfilePath`` for its file-system offloader (pulsar-admin's
``set-offload-policies`` has no flag for them: there they are set through
the admin REST API's policies).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .broker_options import broker_options, opened
from .options import READ_PRIORITIES
from .policy_feature_commands import priority_commands, streaming_commands, transform_commands
from .policy_fields import (
    OFFLOAD_FIELDS,
    TRANSFORMS_HELP,
    check_driver,
    check_file_system,
    show_policies,
    transform_changes,
)
from .topic_commands import namespaces, topics
from .units import parse_duration_ms, parse_size

__all__: list[str] = []


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
    @click.option("--transforms", default=None, help=TRANSFORMS_HELP)
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
        changes: dict[str, Any] = transform_changes(transforms, transform_chunk_size) | {
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
            from ..managed_ledger import ReadPriority

            changes["read_priority"] = ReadPriority.parse(offloaded_read_priority)
        if not changes:
            raise click.UsageError("give at least one policy option (see --help)")
        check_file_system(file_system_uri, file_system_profile_path)
        with opened(data_dir, config_path) as broker:
            check_driver(broker, changes.get("driver"))
            key = parse_name(name)
            broker.policies.update(level, key, **changes)
            show_policies(broker, level, key, [field for field in OFFLOAD_FIELDS if field in changes], as_json=False)

    @group.command("get-offload-policies", help=f"Show the effective offload policies of {label} and their levels.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_policies(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            show_policies(broker, level, parse_name(name), list(OFFLOAD_FIELDS), as_json)

    @group.command("remove-offload-policies", help=f"Remove every offload policy set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_policies(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), **dict.fromkeys(OFFLOAD_FIELDS))
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
            show_policies(broker, level, key, list(changes), as_json=False)

    @group.command("get-offload-threshold", help=f"Show the offload thresholds of {label} and their levels.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_threshold(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            show_policies(
                broker, level, parse_name(name), ["offload_threshold_bytes", "offload_threshold_seconds"], as_json
            )

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
            show_policies(broker, level, key, ["deletion_lag_ms"], as_json=False)

    @group.command("get-offload-deletion-lag", help=f"Show the offload deletion lag of {label} and its level.")
    @click.argument("name", metavar=label)
    @click.option("--json", "as_json", is_flag=True)
    @broker_options
    def get_lag(name: str, as_json: bool, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            show_policies(broker, level, parse_name(name), ["deletion_lag_ms"], as_json)

    @group.command("remove-offload-deletion-lag", help=f"Remove the offload deletion lag set on {label}.")
    @click.argument("name", metavar=label)
    @broker_options
    def remove_lag(name: str, data_dir: str, config_path: str | None) -> None:
        with opened(data_dir, config_path) as broker:
            broker.policies.update(level, parse_name(name), deletion_lag_ms=None)
            click.echo(f"{level} {name}: offload deletion lag removed")


# The policies (and the broker behind them) load when a verb runs, not to parse its arguments.
def _topic_name(name: str) -> str:
    from ..managed_ledger import TopicName

    return str(TopicName.parse(name))


def _namespace_name(name: str) -> str:
    from ..managed_ledger.lifecycle.policies import parse_namespace

    return parse_namespace(name)


for _add in (_policy_commands, priority_commands, streaming_commands, transform_commands):
    _add(topics, "topic", _topic_name)
    _add(namespaces, "namespace", _namespace_name)
