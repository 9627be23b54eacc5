"""``offload segments ...``: PIP-76 streaming segments in a store, no broker needed."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from ..errors import FormatError, OffloadError
from ..offload.ledger import DEFAULT_MAX_BLOCK_SIZE, DEFAULT_MAX_INDEX_SIZE, DEFAULT_RETRY
from ..offload.segments.segment_inventory import StoredSegment, find_segments, select_segment
from ..offload.segments.segment_reads import iter_segment_entries, open_segment
from ..storage import StorageDriver
from .ledger_commands import _cell, format_entry
from .ledger_store import _open, prefix_option
from .options import driver_options


@click.group()
def segments() -> None:
    """Streaming-offload segments (PIP-76 objects) in a store."""


def _load(driver: StorageDriver, segment: StoredSegment) -> Any:
    return open_segment(driver, segment.uuid, prefix=segment.prefix, max_index_size=DEFAULT_MAX_INDEX_SIZE,
                        block_limit=2 * DEFAULT_MAX_BLOCK_SIZE, retry=DEFAULT_RETRY)  # fmt: skip


def _describe(driver: StorageDriver, segment: StoredSegment) -> dict[str, Any]:
    row: dict[str, Any] = {
        "uuid": segment.uuid,
        "prefix": segment.prefix,
        "ledgers": None,
        "blocks": None,
        "bytes": segment.data.size if segment.data else None,
    }
    if not segment.complete:
        missing = [name for name, found in (("data", segment.data), ("index", segment.index)) if found is None]
        row["state"] = f"incomplete ({' and '.join(missing)} missing)"
        return row
    try:
        opened = _load(driver, segment)
    except FormatError as exc:
        row["state"] = f"unreadable: {exc}"
        return row
    except OffloadError as exc:
        row["state"] = f"index could not be read: {type(exc).__name__}: {exc}"
        return row
    ledgers = []
    for ledger_id in opened.index.ledger_ids:
        section = opened.index.section(ledger_id)
        info = section.info()
        # The index says where each ledger starts in the segment, not where it
        # ends (that needs its last block read); its LedgerInfo counts the
        # entries of the whole ledger (closed) or up to here (still open).
        ledgers.append(
            {
                "ledger_id": ledger_id,
                "first_entry_id": section.first_entry_id,
                "blocks": len(section.rows),
                "ledger_info_entries": int(info.entries) if info.HasField("entries") else None,
                "ledger_closed": info.timestamp > 0,
            }
        )
    row.update(ledgers=ledgers, blocks=len(opened.index.blocks), state="complete")
    return row


def _log_order(row: dict[str, Any]) -> tuple[Any, ...]:
    held = row["ledgers"]
    if not held:
        return (row["prefix"], 1, 0, 0, row["uuid"])
    return (row["prefix"], 0, held[0]["ledger_id"], held[0]["first_entry_id"], row["uuid"])


@segments.command("ls")
@click.argument("url")
@prefix_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per segment, one per line.")
@driver_options
def list_segments(url: str, prefix: str, as_json: bool, options: tuple[str, ...]) -> None:
    """List the segments under URL in log order (by the first ledger and
    entry each holds; those whose index cannot be read last): uuid, the
    ledgers each holds and from which entry, blocks, size and state (from
    their indexes)."""
    driver = _open(url, options)
    rows = sorted((_describe(driver, segment) for segment in find_segments(driver, prefix)), key=_log_order)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    click.echo(f"{'UUID':<36}  {'BYTES':>12}  {'BLOCKS':>6}  {'LEDGERS (from entry)':<30}  STATE")
    for row in rows:
        held = ", ".join(f"{lg['ledger_id']}:{lg['first_entry_id']}.." for lg in row["ledgers"] or []) or "-"
        click.echo(f"{row['uuid']:<36}  {_cell(row['bytes']):>12}  {_cell(row['blocks']):>6}  {held:<30}  "
                   f"{row['state']}")  # fmt: skip
    click.echo(f"{len(rows)} segment(s)", err=True)


@segments.command("cat")
@click.argument("url")
@click.argument("uuid")
@click.option("--ledger", type=int, default=None, help="Only this ledger's entries.")
@prefix_option
@click.option("--raw", "output", flag_value="raw", help="Payload bytes only, concatenated (for piping).")
@click.option("--hex", "output", flag_value="hex", default=True, help="ledger, entry id, size, hex payload per line.")
@click.option(
    "--json", "output", flag_value="json", help="One JSON object per entry: ledger_id, entry_id, size, payload_b64."
)
@driver_options
def cat(url: str, uuid: str, ledger: int | None, prefix: str, output: str, options: tuple[str, ...]) -> None:
    """Print the entries of segment UUID in order (all its ledgers, or --ledger)."""
    driver = _open(url, options)
    chosen = select_segment(find_segments(driver, prefix), uuid)
    opened = _load(driver, chosen)
    if ledger is not None:
        opened.index.section(ledger)  # an InvalidRangeError naming what the segment holds
    out = sys.stdout.buffer
    for entry in iter_segment_entries(driver, opened, ledger):
        out.write(format_entry(entry, output, with_ledger=True))
    out.flush()
