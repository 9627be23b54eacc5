"""``offload ledgers ...``: offloaded ledgers in a bucket (ours or Pulsar's)."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from typing import Any

import click

from ..errors import FormatError, OffloadError
from ..formats import pulsar_v1 as v1
from ..model import Entry
from ..offload.ledgers.inventory import OffloadedLedger, select_ledger
from ..offload.ledgers.verify import DEFAULT_INDEX_LIMIT, Defect
from ..offload.mapfile.mapfile_inventory import MapFileLedger
from ..offload.reading.read_handle import ReadHandle
from ..storage import StorageDriver
from .ledger_cleanup_commands import orphans, sweep
from .ledger_layouts import (
    describe_mapfile,
    find_ledgers,
    ledger_bytes,
    ledger_keys,
    read_ledger,
    remove_ledger,
    verify_any,
)
from .ledger_references import even_if_referenced_option, references_data_dir_option, refuse_if_referenced
from .ledger_store import _open, prefix_option, report_leftovers, uuid_option
from .options import driver_options, dry_run_footer, execute_option

_BATCH = 500


@click.group()
def ledgers() -> None:
    """Offloaded ledgers (PIP-17 objects) in a store."""


ledgers.add_command(orphans)
ledgers.add_command(sweep)


@ledgers.command("ls")
@click.argument("url")
@prefix_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per ledger, one per line.")
@driver_options
def list_ledgers(url: str, prefix: str, as_json: bool, options: tuple[str, ...]) -> None:
    """List offloaded ledgers found under URL, with entries and sizes from their indexes."""
    driver = _open(url, options)
    found = find_ledgers(driver, prefix)
    with click.progressbar(found, label="reading indexes", file=sys.stderr) as progress:
        rows = [_describe(driver, ledger) for ledger in progress]
    report_leftovers(driver, url)
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
    if isinstance(ledger, MapFileLedger):
        return describe_mapfile(driver, ledger, row)
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
    handle = read_ledger(driver, select_ledger(find_ledgers(driver, prefix), ledger, uuid))
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
    found = find_ledgers(driver, prefix)
    targets = found if ledger is None else [select_ledger(found, ledger, uuid)]
    total = sum(t.data.size for t in targets if t.data is not None)
    defects: list[Defect] = []
    with click.progressbar(length=total, label="verifying", file=sys.stderr) as progress:
        reports = [verify_any(driver, target, progress.update) for target in targets]
    report_leftovers(driver, url)
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
@references_data_dir_option
@even_if_referenced_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object saying what was (or would be) deleted.")
@driver_options
def remove(
    url: str, ledger: int, uuid: str | None, prefix: str, execute: bool, data_dir: str, even_if_referenced: bool,
    as_json: bool, options: tuple[str, ...],
) -> None:  # fmt: skip
    """Delete both objects of offloaded LEDGER (idempotent) with --execute;
    without it, a dry run that names them and their bytes. Refused, dry
    run or not, while a topic in --data-dir still refers to the ledger
    (unless --even-if-referenced): its entries would become unreadable."""
    driver = _open(url, options)
    chosen = select_ledger(find_ledgers(driver, prefix), ledger, uuid)
    unchecked = refuse_if_referenced(chosen, data_dir, even_if_referenced=even_if_referenced)
    if unchecked is not None:
        click.echo(unchecked, err=True)
    keys = ledger_keys(chosen)
    size = ledger_bytes(chosen)
    if execute:
        remove_ledger(driver, chosen)
    if as_json:
        click.echo(json.dumps({"ledger_id": chosen.ledger_id, "uuid": chosen.uuid, "dry_run": not execute,
                               "bytes": size, "deleted" if execute else "would_delete": keys}))  # fmt: skip
    else:
        verb = "deleted" if execute else "would delete"
        click.echo(f"{verb} ledger {chosen.ledger_id} ({chosen.uuid}): {', '.join(keys)} ({size} bytes)")
    if not execute:
        click.echo(dry_run_footer("them"), err=True)
