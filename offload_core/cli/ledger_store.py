"""What the ``offload ledgers`` verbs (and the other verbs on a store)
share: opening the store, the ``--prefix`` / ``--uuid`` options, and the
leftovers of killed writers noted or removed."""

from __future__ import annotations

import time

import click

from ..errors import mask_secret_text
from ..leftovers import sweep_leftovers
from ..plugins import default_plugin_manager, open_driver
from ..read_transforms import with_read_transforms
from ..storage import StorageDriver
from .options import parse_driver_options

__all__ = ["_open", "prefix_option", "report_leftovers", "sweep_before_rerun", "uuid_option"]


def _open(url: str, options: tuple[str, ...], *, transforms: bool = True) -> StorageDriver:
    """The store at ``url``. These verbs only read (or delete what is
    there): a local root that does not exist is an error, never created."""
    parsed = parse_driver_options(options)
    if url.lower().startswith("file://"):
        parsed.setdefault("create", False)
    # Objects written through chunk transforms read as they were written (a
    # stat per object, once); -o transforms=... chooses otherwise.
    return open_driver(url, **(with_read_transforms(parsed) if transforms else parsed))


prefix_option = click.option("--prefix", default="", help="Only keys starting with this prefix.")
uuid_option = click.option("--uuid", default=None, help="Which offload of the ledger, when there are several.")


def report_leftovers(driver: StorageDriver, url: str) -> None:
    """Note on standard error the leftovers a sweep of ``url`` would remove."""
    due = sweep_leftovers(driver, now=time.time(), dry_run=True, plugins=default_plugin_manager())
    if due:
        size = sum(temporary.size for temporary in due)
        click.echo(
            f"note: {len(due)} leftover file(s) of killed writers ({size} bytes) in the store; "
            f"`offload ledgers sweep {mask_secret_text(url)}` removes them",
            err=True,
        )


def sweep_before_rerun(driver: StorageDriver) -> None:
    """What a re-run of a command that writes does first: remove the files
    a killed run of it (or of any writer) left, by the sweep's rule."""
    swept = sweep_leftovers(driver, now=time.time(), plugins=default_plugin_manager())
    if swept:
        size = sum(temporary.size for temporary in swept)
        click.echo(f"removed {len(swept)} leftover file(s) of killed writers ({size} bytes)", err=True)
