"""``offload ledgers orphans`` and ``offload ledgers sweep``: what is left
in a store that no managed ledger will read, in either ledger layout
(PIP-17 objects, the file-system offloader's MapFile directories)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import click

from ..errors import mask_secret_text
from ..leftovers import DEFAULT_GRACE_SECONDS, sweep_leftovers
from ..offload.stored.kinds import StoredOffload
from ..offload.stored.retention import decide
from ..plugins import default_plugin_manager
from .ledger_layouts import created_ms, delete_ledger, find_ledgers, ledger_bytes, present_keys, unfinished_mapfiles
from .ledger_store import _open, prefix_option
from .options import action_text, driver_options, dry_run_footer, execute_option

__all__ = ["orphans", "sweep"]


@click.command()
@click.argument("url")
@click.option("--data-dir", required=True, type=click.Path(file_okay=False, exists=True),
              help="The broker's data directory: its metadata says which ledgers are referenced.")  # fmt: skip
@prefix_option
@execute_option("--delete")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per orphan, one per line.")
@driver_options
def orphans(url: str, data_dir: str, prefix: str, execute: bool, as_json: bool, options: tuple[str, ...]) -> None:
    """List offloaded ledgers under URL that no managed ledger in DATA_DIR's
    metadata refers to (objects left by crashes, or by topics deleted
    elsewhere), PIP-17 objects and MapFile directories alike (a directory
    without `index` too: an offload that never finished), and with
    --execute delete them: a PIP-17 data object before its index, a MapFile
    `index` before the rest of its directory. The same decisions as
    `offload spark retention --delete-orphans`, without Spark; ledgers a
    topic refers to (offloads in progress too) are never touched."""
    # The broker's side, imported here: the other ledger verbs (and `keys`,
    # `segments`, `kafka`, which share these modules) start without it.
    from ..managed_ledger.lifecycle.references import offload_references
    from ..managed_ledger.metadata_store import SqliteMetadataStore

    database = Path(data_dir) / "metadata.db"
    if not database.is_file():
        raise click.ClickException(f"no metadata store at {database}: without it orphans cannot be told apart")
    driver = _open(url, options)
    store = SqliteMetadataStore(database)
    try:
        references = offload_references(store)
    finally:
        store.close()
    count = failed = size = 0
    for ledger in find_ledgers(driver, prefix):
        if ledger.uuid in references:
            continue
        keys, ledger_size = present_keys(ledger), ledger_bytes(ledger)
        offload = StoredOffload(kind="ledger", uuid=ledger.uuid, ledger_ids=(ledger.ledger_id,), keys=tuple(keys),
                                size=ledger_size, complete=True, label=f"ledger {ledger.ledger_id}", detail=ledger,
                                created_ms=created_ms(driver, ledger))  # fmt: skip
        decision = decide(offload, references, None, True, dry_run=not execute)
        if decision.action == "deleted":
            error = delete_ledger(driver, ledger)
            if error is not None:
                decision = replace(decision, action="failed", reason=f"{decision.reason}; deleting failed: {error}")
                failed += 1
        count += 1
        size += ledger_size
        if as_json:
            click.echo(json.dumps({"ledger_id": ledger.ledger_id, "uuid": ledger.uuid, "keys": keys,
                                   "bytes": ledger_size, "created_ms": decision.created_ms, "action": decision.action,
                                   "reason": mask_secret_text(decision.reason), "dry_run": not execute}))  # fmt: skip
        else:
            click.echo(
                f"{ledger.ledger_id:>12}  {ledger.uuid}  {ledger_size:>12} bytes  {action_text(decision.action)}"
            )
    verb = "deleted" if execute else "found"
    click.echo(f"{count} orphan ledger(s) {verb}, {size} bytes" + (f", {failed} failed" if failed else ""), err=True)
    if not execute:
        click.echo(dry_run_footer(f"these {count} orphan ledger(s)"), err=True)
    if failed:
        raise SystemExit(1)


@click.command()
@click.argument("url")
@click.option(
    "--older-than", type=click.FloatRange(min=0), default=None,
    help=f"Seconds a file of a run not known to be dead must be untouched to count as left over [default: "
         f"managedLedgerOffloadLeftoverGraceSeconds of --config, else {DEFAULT_GRACE_SECONDS:g}]",
)  # fmt: skip
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Broker config (TOML): sweep with the broker's grace period.")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="List them, remove nothing.")
@prefix_option
@execute_option()
@driver_options
def sweep(
    url: str, older_than: float | None, config_path: str | None, dry_run: bool, prefix: str, execute: bool,
    options: tuple[str, ...],
) -> None:  # fmt: skip
    """Remove the temporary and sidecar files that killed writers left in
    the store at URL: at once when their run has provably ended, else once
    they are older than the grace period. Never a file a live writer holds,
    never a committed object or its metadata; a write that reached its
    commit point is finished instead. Unlike the verbs that delete data
    (dry runs unless --execute), it removes these by default: they hold no
    data, and the broker's maintenance runs the same sweep.

    Also lists the MapFile directories (Pulsar's file-system offloader)
    without `index`: offloads that never finished, which hold data no
    reader will read. Those are deleted only with --execute (and never with
    --dry-run): the store does not say how old they are, so run it when no
    offload is under way, or use `offload ledgers orphans`, which keeps
    every offload a managed ledger records."""
    if older_than is None and config_path:
        from ..managed_ledger import load_config

        older_than = float(load_config(config_path).leftover_grace_seconds)
    if older_than is None:
        older_than = DEFAULT_GRACE_SECONDS
    driver = _open(url, options)
    swept = sweep_leftovers(driver, now=time.time(), grace=older_than, dry_run=dry_run,
                            plugins=default_plugin_manager())  # fmt: skip
    for temporary in swept:
        click.echo(f"{'would remove' if dry_run else 'removed'} {temporary.path} ({temporary.size} bytes)")
    click.echo(f"{len(swept)} leftover file(s) of killed writers", err=True)
    deleting = execute and not dry_run
    unfinished = unfinished_mapfiles(driver, prefix)
    failed = 0
    for ledger in unfinished:
        error = delete_ledger(driver, ledger) if deleting else None
        failed += error is not None
        action = f"failed ({error})" if error else "removed" if deleting else "would remove"
        click.echo(f"{action} unfinished MapFile offload {ledger.directory}/ ({ledger_bytes(ledger)} bytes)")
    if unfinished or deleting:
        click.echo(f"{len(unfinished)} unfinished MapFile offload(s)" + (f", {failed} failed" if failed else ""),
                   err=True)  # fmt: skip
    if unfinished and not deleting:
        click.echo(dry_run_footer(f"these {len(unfinished)} unfinished MapFile offload(s)"), err=True)
    if failed:
        raise SystemExit(1)
