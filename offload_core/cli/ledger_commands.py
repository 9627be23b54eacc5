"""``offload ledgers ...``: offloaded ledgers in a bucket (ours or Pulsar's)."""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from ..errors import FormatError, OffloadError, mask_secret_text
from ..formats import pulsar_v1 as v1
from ..leftovers import DEFAULT_GRACE_SECONDS, sweep_leftovers
from ..model import Entry
from ..offload.ledger import BlobStoreLedgerOffloader
from ..offload.ledgers.inventory import OffloadedLedger, find_offloaded_ledgers, select_ledger
from ..offload.ledgers.retention import decide, delete_ledger_objects, ledger_ctime_ms
from ..offload.ledgers.verify import DEFAULT_INDEX_LIMIT, Defect, verify_ledger
from ..offload.reading.read_handle import ReadHandle
from ..plugins import default_plugin_manager, open_driver
from ..read_transforms import with_read_transforms
from ..storage import StorageDriver
from .options import driver_options, dry_run_footer, execute_option, parse_driver_options

_BATCH = 500


@click.group()
def ledgers() -> None:
    """Offloaded ledgers (PIP-17 objects) in a store."""


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


@ledgers.command("ls")
@click.argument("url")
@prefix_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per ledger, one per line.")
@driver_options
def list_ledgers(url: str, prefix: str, as_json: bool, options: tuple[str, ...]) -> None:
    """List offloaded ledgers found under URL, with entries and sizes from their indexes."""
    driver = _open(url, options)
    found = find_offloaded_ledgers(driver, prefix)
    with click.progressbar(found, label="reading indexes", file=sys.stderr) as progress:
        rows = [_describe(driver, ledger) for ledger in progress]
    _report_leftovers(driver, url)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    click.echo(f"{'LEDGER':>12}  {'UUID':<36}  {'ENTRIES':>9}  {'BYTES':>12}  {'BLOCKS':>6}  STATE")
    for row in rows:
        click.echo(
            f"{row['ledger_id']:>12}  {row['uuid']:<36}  {_cell(row['entries']):>9}  {_cell(row['bytes']):>12}  "
            f"{_cell(row['blocks']):>6}  {row['state']}"
        )
    click.echo(f"{len(rows)} ledger(s)", err=True)


@ledgers.command()
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
    elsewhere), and with --execute delete them, data object before index.
    The same decisions as `offload spark retention --delete-orphans`,
    without Spark; ledgers a topic refers to are never touched."""
    # The broker's side, imported here: the other verbs (and `keys`,
    # `segments`, `kafka`, which share this module) start without it.
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
    found = find_offloaded_ledgers(driver, prefix)
    count = failed = size = 0
    for ledger in found:
        if (ledger.ledger_id, ledger.uuid) in references:
            continue
        decision = decide(ledger, ledger_ctime_ms(driver, ledger), references, None, True, dry_run=not execute)
        if decision.action == "deleted":
            error = delete_ledger_objects(driver, ledger)
            if error is not None:
                decision = replace(decision, action="failed", reason=f"{decision.reason}; deleting failed: {error}")
                failed += 1
        count += 1
        size += decision.size
        created = decision.created_ms
        if as_json:
            click.echo(json.dumps({"ledger_id": ledger.ledger_id, "uuid": ledger.uuid, "keys": decision.keys,
                                   "bytes": decision.size, "created_ms": created, "action": decision.action,
                                   "reason": mask_secret_text(decision.reason), "dry_run": not execute}))  # fmt: skip
        else:
            click.echo(f"{ledger.ledger_id:>12}  {ledger.uuid}  {decision.size:>12} bytes  {decision.action}")
    verb = "deleted" if execute else "found"
    click.echo(f"{count} orphan ledger(s) {verb}, {size} bytes" + (f", {failed} failed" if failed else ""), err=True)
    if not execute:
        click.echo(dry_run_footer(f"these {count} orphan ledger(s)"), err=True)
    if failed:
        raise SystemExit(1)


def _report_leftovers(driver: StorageDriver, url: str) -> None:
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


@ledgers.command()
@click.argument("url")
@click.option(
    "--older-than", type=click.FloatRange(min=0), default=None,
    help=f"Seconds a file of a run not known to be dead must be untouched to count as left over [default: "
         f"managedLedgerOffloadLeftoverGraceSeconds of --config, else {DEFAULT_GRACE_SECONDS:g}]",
)  # fmt: skip
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="Broker config (TOML): sweep with the broker's grace period.")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="List them, remove nothing.")
@driver_options
def sweep(url: str, older_than: float | None, config_path: str | None, dry_run: bool, options: tuple[str, ...]) -> None:
    """Remove the temporary and sidecar files that killed writers left in
    the store at URL: at once when their run has provably ended, else once
    they are older than the grace period. Never a file a live writer holds,
    never a committed object or its metadata; a write that reached its
    commit point is finished instead. Unlike the verbs that delete data
    (dry runs unless --execute), it removes by default: what it removes
    holds no data, and the broker's maintenance runs the same sweep."""
    if older_than is None and config_path:
        from ..managed_ledger import load_config  # the broker's side, only for its config

        older_than = float(load_config(config_path).leftover_grace_seconds)
    elif older_than is None:
        older_than = DEFAULT_GRACE_SECONDS
    driver = _open(url, options)
    swept = sweep_leftovers(driver, now=time.time(), grace=older_than, dry_run=dry_run,
                            plugins=default_plugin_manager())  # fmt: skip
    for temporary in swept:
        click.echo(f"{'would remove' if dry_run else 'removed'} {temporary.path} ({temporary.size} bytes)")
    click.echo(f"{len(swept)} leftover file(s) of killed writers", err=True)


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def _describe(driver: StorageDriver, ledger: OffloadedLedger) -> dict[str, Any]:
    row: dict[str, Any] = {
        "ledger_id": ledger.ledger_id,
        "uuid": ledger.uuid,
        "prefix": ledger.prefix,
        "entries": None,
        "bytes": None,
        "blocks": None,
        "data_object_bytes": ledger.data.size if ledger.data else None,
    }
    if not ledger.complete:
        row["state"] = "incomplete (" + ("index" if ledger.index is None else "data") + " missing)"
        return row
    try:
        v1.check_index_size(ledger.index.size if ledger.index else 0, ledger.data.size if ledger.data else 0,
                            limit=DEFAULT_INDEX_LIMIT)  # fmt: skip
        index = v1.decode_index(driver.read(ledger.index_key))
        metadata = index.metadata()
    except FormatError as exc:
        row["state"] = f"unreadable index: {exc}"
        return row
    except OffloadError as exc:
        row["state"] = f"index could not be read: {type(exc).__name__}: {exc}"
        return row
    row.update(entries=metadata.lastEntryId + 1, bytes=metadata.length, blocks=len(index.entries), state="complete")
    return row


@ledgers.command("cat")
@click.argument("url")
@click.argument("ledger", type=int)
@uuid_option
@prefix_option
@click.option("--from", "first", type=int, default=0, show_default=True, help="First entry id.")
@click.option("--to", "last", type=int, default=None, help="Last entry id (default: the ledger's last).")
@click.option("--raw", "output", flag_value="raw", help="Payload bytes only, concatenated (for piping).")
@click.option("--hex", "output", flag_value="hex", default=True, help="entry id, size and hex payload per line.")
@click.option(
    "--json", "output", flag_value="json", help="One JSON object per entry: ledger_id, entry_id, size, payload_b64."
)
@driver_options
def cat(
    url: str,
    ledger: int,
    uuid: str | None,
    prefix: str,
    first: int,
    last: int | None,
    output: str,
    options: tuple[str, ...],
) -> None:
    """Print the entries of offloaded LEDGER (all, or --from/--to)."""
    if first < 0 or (last is not None and last < first):
        raise click.BadParameter(f"--from {first} --to {last} is not a range of entry ids", param_hint="--from/--to")
    driver = _open(url, options)
    chosen = select_ledger(find_offloaded_ledgers(driver, prefix), ledger, uuid)
    offloader = BlobStoreLedgerOffloader(driver, prefix=chosen.prefix)
    handle = offloader.read_offloaded(chosen.ledger_id, chosen.uuid)
    end = handle.last_entry_id if last is None else last
    out = sys.stdout.buffer
    position = first
    while position <= end:
        batch_end = min(end, position + _BATCH - 1)
        for entry in _intact_entries(handle, position, batch_end):
            out.write(format_entry(entry, output, with_ledger=False))
        position = batch_end + 1
    out.flush()


def format_entry(entry: Entry, output: str, *, with_ledger: bool) -> bytes:
    """One offloaded entry as ``cat`` prints it: ``raw`` payload bytes, a
    ``json`` line (``ledger_id``, ``entry_id``, ``tier``, ``size``,
    ``payload_b64``), or a tab-separated ``hex`` line (led by the ledger id
    when ``with_ledger``)."""
    if output == "raw":
        return entry.data
    if output == "json":
        record = {
            "ledger_id": entry.ledger_id,
            "entry_id": entry.entry_id,
            "tier": "offloaded",
            "size": len(entry.data),
            "payload_b64": base64.b64encode(entry.data).decode("ascii"),
        }
        return json.dumps(record).encode() + b"\n"
    lead = f"{entry.ledger_id}\t" if with_ledger else ""
    return f"{lead}{entry.entry_id}\t{len(entry.data)}\t{entry.data.hex()}\n".encode()


def _intact_entries(handle: ReadHandle, first: int, last: int) -> Iterator[Entry]:
    """Entries ``first..last``; when the batch holds damage, every entry
    before it is still yielded, then the error is raised."""
    try:
        yield from handle.read(first, last)
        return
    except FormatError:
        pass
    for entry_id in range(first, last + 1):
        yield from handle.read(entry_id, entry_id)


@ledgers.command()
@click.argument("url")
@click.argument("ledger", type=int, required=False)
@uuid_option
@prefix_option
@click.option("--json", "as_json", is_flag=True, help="One JSON report per ledger, one per line.")
@driver_options
def verify(
    url: str, ledger: int | None, uuid: str | None, prefix: str, as_json: bool, options: tuple[str, ...]
) -> None:
    """Read every block of every offloaded ledger under URL (or just LEDGER)
    and check its structure.

    \b
    Checked, per ledger:
    - both objects exist and carry format version 1 in their metadata;
    - the index decodes: magic, lengths, part ids from 1, rising offsets,
      BookKeeper metadata with its required fields;
    - the data object is exactly as long as the index says;
    - each block's header: magic, header length 128, zero fill, block
      length equal to the span the index gives it, first entry id equal
      to the index row;
    - entries are framed whole inside their block, ids run 0, 1, 2 ...
      up to the ledger's last entry with none missing or repeated;
    - the rest of each block is FE DC DE AD padding;
    - entry lengths add up to the ledger's length.

    \b
    Not checked: payload bytes. PIP-17 objects carry no checksum, so a
    changed payload byte of the same length passes, unless the ledger was
    written through a checking transform (crc32c, aes-gcm, zstd) and is
    read through them (the default, -o transforms=auto; not with
    -o transforms=none): then every chunk is checked too.

    Exits 1 if any ledger has a defect, naming where the first one is.
    """
    driver = _open(url, options)
    found = find_offloaded_ledgers(driver, prefix)
    targets = found if ledger is None else [select_ledger(found, ledger, uuid)]
    total = sum(t.data.size for t in targets if t.data is not None)
    defects: list[Defect] = []
    with click.progressbar(length=total, label="verifying", file=sys.stderr) as progress:
        reports = [verify_ledger(driver, target, on_block=progress.update) for target in targets]
    _report_leftovers(driver, url)
    for report in reports:
        defects.extend(report.defects)
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "ledger_id": report.ledger.ledger_id,
                        "uuid": report.ledger.uuid,
                        "ok": report.ok,
                        "blocks": report.blocks,
                        "entries": report.entries,
                        "bytes": report.entry_bytes,
                        "defects": [{"key": d.key, "offset": d.offset, "problem": d.problem} for d in report.defects],
                    }
                )
            )
        elif report.ok:
            click.echo(
                f"ok      ledger {report.ledger.ledger_id} ({report.ledger.uuid}): "
                f"{report.blocks} blocks, {report.entries} entries, {report.entry_bytes} bytes"
            )
        else:
            for defect in report.defects:
                click.echo(f"DEFECT  {defect.location()}: {defect.problem}")
    click.echo(f"verified {len(reports)} ledger(s): {len(defects)} defect(s)", err=True)
    if defects:
        first = defects[0]
        raise click.ClickException(f"first defect: {first.location()}: {first.problem}")


@ledgers.command("rm")
@click.argument("url")
@click.argument("ledger", type=int)
@uuid_option
@prefix_option
@execute_option("--yes")
@click.option("--json", "as_json", is_flag=True, help="One JSON object saying what was (or would be) deleted.")
@driver_options
def remove(
    url: str, ledger: int, uuid: str | None, prefix: str, execute: bool, as_json: bool, options: tuple[str, ...]
) -> None:
    """Delete both objects of offloaded LEDGER (idempotent) with --execute;
    without it, a dry run that names them and their bytes."""
    driver = _open(url, options)
    chosen = select_ledger(find_offloaded_ledgers(driver, prefix), ledger, uuid)
    keys = [chosen.data_key, chosen.index_key]
    size = sum(info.size for info in (chosen.data, chosen.index) if info is not None)
    if execute:
        driver.delete(keys)
    if as_json:
        click.echo(json.dumps({"ledger_id": chosen.ledger_id, "uuid": chosen.uuid, "dry_run": not execute,
                               "bytes": size, "deleted" if execute else "would_delete": keys}))  # fmt: skip
    else:
        verb = "deleted" if execute else "would delete"
        click.echo(f"{verb} ledger {chosen.ledger_id} ({chosen.uuid}): {keys[0]}, {keys[1]} ({size} bytes)")
    if not execute:
        click.echo(dry_run_footer("them"), err=True)
