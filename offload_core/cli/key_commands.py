"""``offload keys ...``: the keys of encrypted objects, and the keyring
file that holds them (``add``, ``list``, ``retire``; the aes-gcm plugin's
file format, so those verbs need that plugin)."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import click

from ..errors import ConfigError, TransformNotInstalledError, mask_secret_text
from ..key_rotation import objects_wrapped_with, rotate_keys
from ..plugins import PluginManager
from ..registries import install_hint
from .ledger_store import _open, prefix_option, sweep_before_rerun
from .options import driver_options, dry_run_footer, execute_option


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


_KEYRING_ENV = "OFFLOAD_AES_GCM_KEYRING"
keyring_option = click.option(
    "--keyring", "keyring_path", default=None, metavar="PATH",
    help=f"The keyring file (default: ${_KEYRING_ENV}, file:/path).",
)  # fmt: skip


def _keyring_file(keyring_path: str | None) -> Path:
    """The keyring file ``--keyring`` or ``$OFFLOAD_AES_GCM_KEYRING`` names;
    :class:`ConfigError` if neither does, or the latter names a keyring that
    is not a file (a KMS keeps its own keys)."""
    spec = keyring_path or os.environ.get(_KEYRING_ENV)
    if not spec:
        raise ConfigError(f"name the keyring file with --keyring PATH or {_KEYRING_ENV}=file:/path/keyring.json")
    scheme, colon, _ = spec.partition(":")
    if colon and scheme != "file" and len(scheme) > 1:  # a one-letter scheme is a Windows drive
        raise ConfigError(f"{_KEYRING_ENV}={spec!r} is not a keyring file: keys add/list/retire keep file keyrings "
                          "only; manage a KMS's keys with its own tools")  # fmt: skip
    return Path(spec.removeprefix("file:"))


def _keyring_files() -> ModuleType:
    """The aes-gcm plugin's keyring-file module (imported here, not at the
    top: the other verbs need no plugin)."""
    try:
        return importlib.import_module("offload_plugin_aes_gcm.keyring_file")
    except ImportError:
        raise TransformNotInstalledError(
            "keyring files are the aes-gcm transform's: install offload-plugin-aes-gcm "
            f"({install_hint('offload-plugin-aes-gcm')})"
        ) from None


@keys.command("add")
@click.argument("key_id", required=False)
@click.option("--activate", is_flag=True, help="Make it the active key: new objects are written under it.")
@keyring_option
def add(key_id: str | None, activate: bool, keyring_path: str | None) -> None:
    """Add a fresh random AES-256 key-encryption key to the keyring file,
    under KEY_ID (default: k<n+1>). A keyring that does not exist is
    created, with this key active. To rotate: add a key with --activate,
    run `offload keys rotate URL`, then `offload keys retire OLD_ID URL --execute`."""
    path = _keyring_file(keyring_path)
    created = not path.exists()
    chosen = _keyring_files().add_key(path, key_id, activate=activate)
    if created:
        click.echo(f"created {path} with key {chosen}, active")
    else:
        click.echo(f"added key {chosen} to {path}, {'active' if activate else 'not active (--activate makes it so)'}")


@keys.command("list")
@click.option("--json", "as_json", is_flag=True)
@keyring_option
def list_keys(as_json: bool, keyring_path: str | None) -> None:
    """List the key ids in the keyring file and which one is active (never the keys)."""
    ring = _keyring_files().read_keyring_file(_keyring_file(keyring_path))
    if as_json:
        click.echo(json.dumps({"keyring": str(ring.path), "active": ring.active, "keys": list(ring.key_ids)}))
        return
    click.echo(f"{'KEY ID':<24} ACTIVE")
    for key_id in ring.key_ids:
        click.echo(f"{key_id:<24} {'yes' if key_id == ring.active else 'no'}")


@keys.command("retire")
@click.argument("key_id")
@click.argument("urls", nargs=-1, metavar="[URL]...")
@prefix_option
@execute_option()
@keyring_option
@driver_options
def retire(
    key_id: str, urls: tuple[str, ...], prefix: str, execute: bool, keyring_path: str | None, options: tuple[str, ...]
) -> None:
    """Remove KEY_ID from the keyring file with --execute; without it, a dry
    run that says what would be removed. Refused while objects under a
    store URL given (each store the keyring's objects live in) still have
    data keys wrapped under KEY_ID: run `offload keys rotate URL` first.
    Without a URL nothing is checked, and objects still wrapped under it
    become unreadable. The active key cannot be retired."""
    path = _keyring_file(keyring_path)
    files = _keyring_files()
    files.retire_key(path, key_id, dry_run=True)
    manager = PluginManager()
    for url in urls:
        with _open(url, options, transforms=False) as driver:
            using = list(objects_wrapped_with(driver, manager.transform, key_id, prefix))
        if using:
            raise ConfigError(
                f"{len(using)} object(s) under {url} still have data keys wrapped under key {key_id!r} (first: "
                f"{using[0]}): run `offload keys rotate {url}` first, then retire it"
            )
        click.echo(mask_secret_text(f"no object under {url} uses key {key_id}"), err=True)
    if not urls:
        click.echo(
            f"warning: no store named, so none checked: objects whose data keys are still wrapped under key {key_id} "
            f"become unreadable once it is retired (name each store: offload keys retire {key_id} URL ...)",
            err=True,
        )
    if not execute:
        click.echo(f"would retire key {key_id} from {path}")
        click.echo(dry_run_footer(f"key {key_id} from the keyring"), err=True)
        return
    files.retire_key(path, key_id)
    click.echo(f"retired key {key_id} from {path}")
