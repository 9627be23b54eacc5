"""Options shared by several verbs."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def parse_driver_options(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``("bucket=b", "create=false")`` -> ``{"bucket": "b", "create": False}``."""
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--option")
        lowered = value.lower()
        number = value.isascii() and value.isdigit()
        options[name] = {"true": True, "false": False}.get(lowered, int(value) if number else value)
    return options


def driver_options(command: F) -> F:
    """Adds ``-o/--option KEY=VALUE`` (repeatable) for the storage driver."""
    return click.option(
        "-o",
        "--option",
        "options",
        multiple=True,
        metavar="KEY=VALUE",
        help="Storage-driver option (repeatable), e.g. -o endpoint=http://127.0.0.1:9000.",
    )(command)


def metrics_port_option(command: F) -> F:
    """Adds ``--metrics-port PORT``: the metrics plugin serves
    ``http://127.0.0.1:PORT/metrics`` while the command runs (0: any free
    port; the URL is printed to stderr)."""

    @functools.wraps(command)
    def serving(*args: Any, metrics_port: int | None, **kwargs: Any) -> Any:
        if metrics_port is None:
            return command(*args, **kwargs)
        from ..plugins import default_plugin_manager

        server = default_plugin_manager().serve_metrics(metrics_port)
        click.echo(f"metrics: {server.url}", err=True)
        try:
            return command(*args, **kwargs)
        finally:
            server.close()

    return click.option(
        "--metrics-port",
        type=click.IntRange(0, 65535),
        default=None,
        help="Serve Prometheus metrics on 127.0.0.1:PORT while this runs (needs offload-plugin-prometheus).",
    )(serving)  # type: ignore[return-value]


def execute_option(*aliases: str) -> Callable[[F], F]:
    """Adds ``--execute``, the one flag with which a deleting verb really
    deletes; without it the verb is a dry run that says what would go.
    ``aliases`` are the verb's older flags, kept working for scripts."""
    kept = f" ({' / '.join(aliases)}: the same, kept for compatibility)" if aliases else ""
    return click.option(
        "--execute",
        *aliases,
        "execute",
        is_flag=True,
        help=f"Really delete; without it, a dry run that only says what would be deleted{kept}.",
    )


def action_text(action: str) -> str:
    """A retention decision's action as a line of text says it: ``delete``
    is only what a dry run would do."""
    return "would delete" if action == "delete" else action


def dry_run_footer(what: str) -> str:
    """The last line of a deleting verb's dry run: how to really delete."""
    return f"dry run: nothing deleted; add --execute to delete {what}"


# Every name ReadPriority.parse takes, for the help of the options that take one.
READ_PRIORITIES = (
    "tiered-storage-first (= offloaded-first), bookkeeper-first, "
    "offloaded-only (= tiered-storage-only), bookkeeper-only"
)
