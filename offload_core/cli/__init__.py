"""The ``offload`` command.

Each verb group's module is imported only when that group runs: ``offload
--help`` and ``offload --version`` start without them (the Kafka, offload
and Spark modules take most of a second to import).
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any, NamedTuple

import click

from ..errors import OffloadError, mask_secret_text
from .closed_stdout import exit_quietly_if_stdout_closed

__all__ = ["main"]


class _Verb(NamedTuple):
    """Where a verb group lives, and its help's first sentence for the
    top-level ``--help`` (the group's own help text; a test keeps them
    equal)."""

    module: str
    attribute: str
    short_help: str


# topics and namespaces load through policy_commands: it adds the
# offload-policy verbs to both groups.
_VERBS = {
    "drivers": _Verb("driver_commands", "drivers", "Storage drivers."),
    "kafka": _Verb("kafka_commands", "kafka", "Kafka log segments in a store (KIP-405 tiered storage)."),
    "keys": _Verb("key_commands", "keys", "Keys of objects written with an encrypting transform (aes-gcm)."),
    "ledgers": _Verb("ledger_commands", "ledgers", "Offloaded ledgers (PIP-17 objects) in a store."),
    "namespaces": _Verb("policy_commands", "namespaces", "Namespace policies of the embedded broker."),
    "plugins": _Verb(
        "plugin_commands",
        "plugins",
        "List installed plugins, their distributions, and the drivers and ledger offloaders they add "
        "(with the drivers each offloader serves), and their chunk transforms; and each plugin that "
        "failed to import, with its error.",
    ),
    "segments": _Verb("segment_commands", "segments", "Streaming-offload segments (PIP-76 objects) in a store."),
    "spark": _Verb("spark_commands", "spark", "Bulk jobs on Spark: backfill, verify, retention, export to Iceberg."),
    "topics": _Verb("policy_commands", "topics", "Topics of the embedded broker (one managed ledger each)."),
}


class _Group(click.Group):
    """Turns our errors and the machine's into one clear line and exit
    status 1, not a traceback, secrets masked (a URL's userinfo or query, a
    ``sig=``/``AccountKey=`` value): a message may quote a store's URL.
    Standard output closed early ends the command quietly (see
    :mod:`.closed_stdout`). A verb group is imported when looked up (see
    :data:`_VERBS`), never to list it in ``--help``."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(_VERBS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        verb = _VERBS.get(cmd_name)
        if verb is None:
            return super().get_command(ctx, cmd_name)
        command = getattr(importlib.import_module(f".{verb.module}", __name__), verb.attribute)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Click's listing, each verb group's help taken from :data:`_VERBS`."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            verb = _VERBS.get(name)
            if verb is not None:
                rows.append((name, click.Command(name, help=verb.short_help).get_short_help_str(limit)))
                continue
            command = super().get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            try:
                return super().main(*args, **kwargs)
            finally:
                sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at interpreter exit
        except BrokenPipeError:
            exit_quietly_if_stdout_closed()
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OffloadError as exc:
            raise click.ClickException(mask_secret_text(f"{type(exc).__name__}: {exc}")) from exc
        except OSError as exc:
            if isinstance(exc, BrokenPipeError):
                exit_quietly_if_stdout_closed()
            # The machine said no (a path, a permission, a full disk): that is
            # the user's to fix and deserves one line, not a traceback.
            where = f": {exc.filename}" if exc.filename else ""
            raise click.ClickException(mask_secret_text(f"{type(exc).__name__}: {exc.strerror or exc}{where}")) from exc


class _MaskedWarnings(logging.Handler):
    """The library's warnings on stderr, as Python's last-resort handler
    prints them (the message alone, from WARNING up), secrets masked: a
    warning may quote a store's URL or settings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(mask_secret_text(self.format(record)), err=True)
        except Exception:  # logging's contract: report through handleError, never raise
            self.handleError(record)


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """Click's ``--version`` message, the version read from the installed
    distribution only when asked for."""
    if not value or ctx.resilient_parsing:
        return
    from .. import __version__

    click.echo(f"offload, version {__version__}", color=ctx.color)
    ctx.exit()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def main() -> None:
    """offload-core: tiered storage for append-only logs.

    Offload sealed log data to object storage and read it back by position.
    """
    root = logging.getLogger()
    if not root.handlers:  # an application (or pytest) that configured logging keeps its own
        root.addHandler(_MaskedWarnings())
    from ..plugins import default_plugin_manager

    # Every command works without a plugin that fails to import; each says so once.
    for failure in default_plugin_manager().failed():
        click.echo(mask_secret_text(f"warning: {failure.describe()}"), err=True)
