"""``offload keys ...``: the keys of encrypted objects."""

from __future__ import annotations

import sys

import click

from ..key_rotation import rotate_keys
from ..plugins import PluginManager
from .ledger_store import _open, prefix_option, sweep_before_rerun
from .options import driver_options


@click.group()
def keys() -> None:
    """Keys of objects written with an encrypting transform (aes-gcm)."""


@keys.command("rotate")
@click.argument("url")
@prefix_option
@click.option("--dry-run", is_flag=True, help="Only say which objects would be re-wrapped.")
@driver_options
def rotate(url: str, prefix: str, dry_run: bool, options: tuple[str, ...]) -> None:
    """Re-wrap the data keys of encrypted objects under URL with the
    keyring's active key, without rewriting their data. Keep the old key in
    the keyring until a run has finished; a run stopped half way is finished
    by running it again, which first removes the temporary files it left
    (see `offload ledgers sweep`)."""
    manager = PluginManager()
    looked = changed = 0
    with _open(url, options, transforms=False) as driver:
        if not dry_run:
            sweep_before_rerun(driver)
        for rotated in rotate_keys(driver, manager.transform, prefix, dry_run=dry_run):
            looked += 1
            if rotated.changed:
                changed += 1
                click.echo(f"{'would re-wrap' if dry_run else 're-wrapped'} {rotated.key}")
    click.echo(f"{changed} of {looked} transformed object(s) {'need re-wrapping' if dry_run else 're-wrapped'}",
               err=True)  # fmt: skip
    sys.stdout.flush()
