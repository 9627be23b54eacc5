"""The ``offload`` command."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from .. import __version__
from ..errors import OffloadError, mask_secret_text
from ..plugins import default_plugin_manager
from . import policy_commands  # noqa: F401 - adds the offload-policy verbs to topics and namespaces
from .closed_stdout import exit_quietly_if_stdout_closed
from .driver_commands import drivers
from .kafka_commands import kafka
from .key_commands import keys
from .ledger_commands import ledgers
from .plugin_commands import plugins
from .segment_commands import segments
from .spark_commands import spark
from .topic_commands import namespaces, topics

__all__ = ["main"]


class _Group(click.Group):
    """Turns our errors and the machine's into one clear line and exit
    status 1, not a traceback, secrets masked (a URL's userinfo or query, a
    ``sig=``/``AccountKey=`` value): a message may quote a store's URL.
    Standard output closed early ends the command quietly (see
    :mod:`.closed_stdout`)."""

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


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="offload")
def main() -> None:
    """offload-core: tiered storage for append-only logs.

    Offload sealed log data to object storage and read it back by position.
    """
    root = logging.getLogger()
    if not root.handlers:  # an application (or pytest) that configured logging keeps its own
        root.addHandler(_MaskedWarnings())
    # Every command works without a plugin that fails to import; each says so once.
    for failure in default_plugin_manager().failed():
        click.echo(mask_secret_text(f"warning: {failure.describe()}"), err=True)


main.add_command(plugins)
main.add_command(drivers)
main.add_command(ledgers)
main.add_command(segments)
main.add_command(topics)
main.add_command(namespaces)
main.add_command(spark)
main.add_command(kafka)
main.add_command(keys)
