"""pulsar-admin's offload-policy verbs, for namespaces and topics.

``set-offload-policies`` / ``get-offload-policies`` /
``remove-offload-policies`` and the verbs of one setting or feature each
(``-offload-threshold``, ``-offload-deletion-lag``, ``-tiered-read-priority``,
``-offload-streaming`` for PIP-76 streaming offload and
``-offload-transforms`` for chunk transforms, ours), with Pulsar's size and
duration syntax (``10M``, ``4h``): one table, :data:`POLICY_VERBS`, of
which options set which fields, built into commands by
:mod:`offload_core.cli.policy_verbs`. ``get`` shows each effective value
and the level it comes from. ``--file-system-uri`` /
``--file-system-profile-path`` set what Pulsar's offload policies hold as
``fileSystemURI`` / ``fileSystemProfilePath`` for its file-system
offloader (pulsar-admin's ``set-offload-policies`` has no flag for them:
there they are set through the admin REST API's policies).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from .options import READ_PRIORITIES
from .policy_fields import FIELDS, STREAMING_FIELDS, TRANSFORM_FIELDS
from .policy_verbs import PolicyVerbs, Setting, add_policy_verbs
from .topic_commands import namespaces, topics

# The policies (and the broker behind them) load when a verb runs, not to parse its arguments.
if TYPE_CHECKING:
    from ..managed_ledger import Broker

__all__ = ["POLICY_VERBS"]

_TRANSFORMS_HELP = 'Chunk transforms of new offloads, in order, e.g. zstd,aes-gcm,crc32c; "" for none.'
_CHUNK_SIZE_HELP = "Logical bytes per transformed chunk, e.g. 1M."


def _option(field: str, *decls: str, help: str | None = None, what: str = "", **attrs: Any) -> Setting:
    return Setting(click.Option(list(decls), default=None, help=help, **attrs), field, what)


def _report_priority(broker: Broker, level: str, name: str, key: str, changes: dict[str, Any]) -> None:
    click.echo(f"{level} {name}: tiered read priority {changes['read_priority'].name}")


def _show_priority(broker: Broker, level: str, key: str, as_json: bool) -> None:
    """The priority set on this level, and the one in effect."""
    from ..managed_ledger import TopicName

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


POLICY_VERBS = (
    PolicyVerbs(
        "offload-policies",
        "Set offload policies on {label} (only the options given).",
        "Show the effective offload policies of {label} and their levels.",
        "Remove every offload policy set on {label}.",
        "offload policies",
        tuple(FIELDS),
        (
            _option("driver", "-d", "--driver", help="Storage driver (name, Pulsar alias or URL)."),
            _option("bucket", "-b", "--bucket"),
            _option("region", "-r", "--region"),
            _option("endpoint", "-e", "--endpoint"),
            _option(
                "file_system_uri",
                "--file-system-uri",
                help="fileSystemURI of the file-system offloader (-d filesystem): file:///... or hdfs://host:port.",
            ),
            _option(
                "file_system_profile_path",
                "--file-system-profile-path",
                help="fileSystemProfilePath: its Hadoop XML profile(s), comma-separated, later ones winning.",
            ),
            _option("max_block_size", "--max-block-size", help="e.g. 64M"),
            _option("read_buffer_size", "--read-buffer-size", help="e.g. 1M"),
            _option(
                "offload_threshold_bytes",
                "--offload-after-threshold",
                help="Hot-tier size that triggers offload, e.g. 10G; -1: off.",
            ),
            _option(
                "offload_threshold_seconds",
                "--offload-after-elapsed",
                help="Age that triggers offload, e.g. 4h; -1: off.",
            ),
            _option(
                "deletion_lag_ms",
                "--offload-deletion-lag",
                help="Delete the hot copy this long after offload, e.g. 4h.",
            ),
            _option(
                "read_priority", "--offloaded-read-priority", metavar="PRIORITY", help=f"One of: {READ_PRIORITIES}."
            ),
            _option("transforms", "--transforms", help=_TRANSFORMS_HELP),
            _option("transform_chunk_size", "--transform-chunk-size", help=_CHUNK_SIZE_HELP),
        ),
        missing="give at least one policy option (see --help)",
    ),
    PolicyVerbs(
        "offload-threshold",
        "Set the offload thresholds of {label}.",
        "Show the offload thresholds of {label} and their levels.",
        "Remove the offload thresholds set on {label}.",
        "offload thresholds",
        ("offload_threshold_bytes", "offload_threshold_seconds"),
        (
            _option(
                "offload_threshold_bytes",
                "-s",
                "--size",
                help="Hot-tier size that triggers offload, e.g. 10M; -1: off.",
            ),
            _option(
                "offload_threshold_seconds",
                "-t",
                "--time",
                "elapsed",
                help="Age that triggers offload, e.g. 4h; -1: off.",
            ),
        ),
        missing="give --size and/or --time",
    ),
    PolicyVerbs(
        "offload-deletion-lag",
        "Set the offload deletion lag of {label}.",
        "Show the offload deletion lag of {label} and its level.",
        "Remove the offload deletion lag set on {label}.",
        "offload deletion lag",
        ("deletion_lag_ms",),
        (
            Setting(
                click.Option(["-l", "--lag"], required=True, help="e.g. 4h, 10m, 0 (delete right after offload)."),
                "deletion_lag_ms",
            ),
        ),
    ),
    PolicyVerbs(
        "tiered-read-priority",
        f"Set the tiered read priority of {{label}}: {READ_PRIORITIES}.",
        "Show the tiered read priority set on {label}.",
        "Remove the tiered read priority set on {label}.",
        "tiered read priority",
        ("read_priority",),
        (Setting(click.Argument(["priority"], metavar="PRIORITY"), "read_priority"),),
        report=_report_priority,
        show=_show_priority,
    ),
    PolicyVerbs(
        "offload-streaming",
        "Turn streaming offload (PIP-76) on or off for {label}, and set its segment limits.",
        "Show the streaming offload settings of {label} and their levels.",
        "Remove the streaming offload settings set on {label}.",
        "streaming offload settings",
        STREAMING_FIELDS,
        (
            _option("streaming_enabled", "--enable/--disable", "enabled", help="Stream entries as they are written."),
            _option("segment_max_size_mb", "--max-segment-size", help="Close a segment at this size, e.g. 1G."),
            _option(
                "segment_rollover_minutes", "--max-segment-rollover", help="Close a segment at this age, e.g. 10h."
            ),
            _option("streaming_buffer_bytes", "--buffer-size", help="Bytes held for the upload at most, e.g. 128M."),
        ),
        missing="give --enable or --disable and/or a segment limit (see --help)",
    ),
    PolicyVerbs(
        "offload-transforms",
        "Set the chunk transforms of {label}'s new offloads (objects already written keep theirs and stay readable).",
        "Show the chunk transforms of {label} and their levels.",
        "Remove the chunk transforms set on {label}.",
        "chunk transforms",
        TRANSFORM_FIELDS,
        (
            Setting(click.Argument(["transforms"], metavar="TRANSFORMS"), "transforms"),
            _option("transform_chunk_size", "--chunk-size", help=_CHUNK_SIZE_HELP, what="--transform-chunk-size"),
        ),
    ),
)


def _topic_name(name: str) -> str:
    from ..managed_ledger import TopicName

    return str(TopicName.parse(name))


def _namespace_name(name: str) -> str:
    from ..managed_ledger.lifecycle.policies import parse_namespace

    return parse_namespace(name)


for _verbs in POLICY_VERBS:
    add_policy_verbs(topics, "topic", _topic_name, _verbs)
    add_policy_verbs(namespaces, "namespace", _namespace_name, _verbs)
