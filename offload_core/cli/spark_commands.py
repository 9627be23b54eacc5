"""``offload spark ...``: the bulk jobs on Spark (the core's ``spark`` extra: ``pip install -e ".[spark]"``)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import click

from ..errors import mask_secret_text
from .broker_options import broker_options
from .options import action_text, driver_options, execute_option, metrics_port_option, parse_driver_options
from .spark_export_commands import export
from .spark_session import master_option
from .spark_session import printer as _printer
from .spark_session import spark_session as _session

_DURATION = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@click.group()
def spark() -> None:
    """Bulk jobs on Spark: backfill, verify, retention, export to Iceberg."""


spark.add_command(export)


@spark.command()
@click.option("--topic", "topics", multiple=True, help="Topic to backfill (repeatable; default: every topic).")
@broker_options
@driver_options
@master_option
@metrics_port_option
def backfill(
    topics: tuple[str, ...], data_dir: str, config_path: str | None, options: tuple[str, ...], master: str | None
) -> None:
    """Offload every sealed ledger not offloaded yet, one Spark task per
    ledger; each ledger is marked offloaded once all its objects are written.
    A topic with streaming offload on is backfilled in segments of its
    configured size instead, one Spark task per segment.

    The store is the config's (managedLedgerOffloadDriver, Bucket,
    ServiceEndpoint, Region); credentials go as -o access_key_id=... -o
    secret_access_key=..., sent to every executor and never recorded.

    The topics must not be open in a running broker. Exits 1 if any ledger
    failed (those stay as they were)."""
    from ..managed_ledger import load_config

    session = _session(master)
    from ..spark.backfill_job import backfill as run_backfill

    result = run_backfill(
        session, data_dir, config=load_config(config_path), topics=topics or None,
        driver_options=parse_driver_options(options), progress=_printer,
    )  # fmt: skip
    for outcome in result.ledgers:
        if outcome.error is None:
            click.echo(
                f"offloaded  {outcome.topic} ledger {outcome.ledger_id} ({outcome.uuid}): {outcome.data_bytes} bytes"
            )
        else:
            click.echo(f"FAILED     {outcome.topic} ledger {outcome.ledger_id}: {mask_secret_text(outcome.error)}")
    for segment in result.segments:
        held = ", ".join(f"{lid}:{first}..{last}" for lid, first, last in segment.runs)
        if segment.error is None:
            click.echo(f"streamed   {segment.topic} segment {segment.uuid} ({held}): {segment.data_bytes} bytes")
        else:
            click.echo(f"FAILED     {segment.topic} segment {segment.uuid} ({held}): {mask_secret_text(segment.error)}")
    summary = f"backfill: {len(result.offloaded)} offloaded, {len(result.failed)} failed"
    if result.segments:
        written = len(result.segments) - len(result.failed_segments)
        summary += f"; {written} segment(s) written, {len(result.failed_segments)} failed"
    click.echo(summary, err=True)
    if result.failed or result.failed_segments:
        raise SystemExit(1)


@spark.command()
@click.argument("url")
@click.option("--prefix", default="", help="Only keys starting with this prefix.")
@click.option("--ledger", "ledger_ids", type=int, multiple=True, help="Ledger to verify (repeatable; default all).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per defect, one per line.")
@driver_options
@master_option
@metrics_port_option
def verify(
    url: str, prefix: str, ledger_ids: tuple[int, ...], as_json: bool, options: tuple[str, ...], master: str | None
) -> None:
    """Check every block of every offload under URL in parallel (v1
    ledgers, v2 segments, Hadoop MapFile ledgers, and what other
    installed offloaders wrote):
    framing, the index against the data, entry ids and lengths.

    Prints each defect with its ledger and byte offset; exits 1 if any."""
    session = _session(master)
    from ..spark.verify_job import verify_store

    result = verify_store(
        session, url, driver_options=parse_driver_options(options), prefix=prefix,
        ledgers=ledger_ids or None, progress=_printer,
    )  # fmt: skip
    defects = [defect for report in result.reports for defect in report.defects]
    for defect in defects:
        if as_json:
            fields = {"ledger_id": defect.ledger_id, "uuid": defect.uuid, "key": defect.key, "offset": defect.offset}
            click.echo(json.dumps({**fields, "problem": defect.problem}))
        else:
            click.echo(f"DEFECT  {defect.location()}: {defect.problem}")
    blocks = sum(report.blocks for report in result.reports)
    if as_json:
        click.echo(json.dumps({"offloads": len(result.reports), "blocks": blocks, "defects": len(defects)}))
    else:
        click.echo(f"verified {len(result.reports)} offload(s), {blocks} block(s): {len(defects)} defect(s)")
    if defects:
        raise SystemExit(1)


def _cutoff(older_than: str | None, before: str | None) -> datetime:
    if (older_than is None) == (before is None):
        raise click.UsageError("give exactly one of --older-than (e.g. 30d) and --before (an ISO date)")
    if older_than is not None:
        match = _DURATION.match(older_than)
        if match is None:
            raise click.BadParameter(
                f"{older_than!r} is not a duration like 90s, 15m, 12h, 30d or 4w", param_hint="--older-than"
            )
        return datetime.now(UTC) - timedelta(**{_UNITS[match[2]]: int(match[1])})
    assert before is not None
    try:
        parsed = datetime.fromisoformat(before)
    except ValueError:
        raise click.BadParameter(f"{before!r} is not an ISO date or time", param_hint="--before") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


@spark.command()
@click.argument("url")
@click.option(
    "--older-than", default=None, help="Delete ledgers created longer ago than this (90s, 15m, 12h, 30d, 4w)."
)
@click.option("--before", default=None, help="Delete ledgers created before this ISO date/time (UTC unless given).")
@click.option("--data-dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Broker data directory whose metadata says which ledgers are in use (finds orphans).")  # fmt: skip
@click.option("--delete-orphans", is_flag=True, help="Also delete orphans of any age (needs --data-dir).")
@execute_option()
@click.option("--prefix", default="", help="Only keys starting with this prefix.")
@driver_options
@master_option
@metrics_port_option
def retention(
    url: str, older_than: str | None, before: str | None, data_dir: str | None, delete_orphans: bool,
    execute: bool, prefix: str, options: tuple[str, ...], master: str | None,
) -> None:  # fmt: skip
    """Delete offloads under URL (v1 ledgers, v2 segments, Hadoop MapFile
    ledgers, and what other installed offloaders wrote) created before a
    cut-off, and find orphans. A dry run unless --execute; ledgers a
    managed ledger in --data-dir refers to are never deleted here."""
    from ..managed_ledger import SqliteMetadataStore

    cutoff = _cutoff(older_than, before)
    if delete_orphans and data_dir is None:
        raise click.UsageError("--delete-orphans needs --data-dir: orphans are found against the metadata there")
    session = _session(master)
    from ..spark.retention_job import retention as run_retention

    if data_dir is None:
        click.echo(
            "warning: without --data-dir no ledger is protected: ledgers a topic still refers to are deleted like "
            "any other once they pass the cut-off (pass the broker's --data-dir to keep them)",
            err=True,
        )
    store = SqliteMetadataStore(f"{data_dir}/metadata.db") if data_dir is not None else None
    try:
        result = run_retention(
            session, url, cutoff=cutoff, metadata=store, driver_options=parse_driver_options(options),
            prefix=prefix, delete_orphans=delete_orphans, dry_run=not execute, progress=_printer,
        )  # fmt: skip
    finally:
        if store is not None:
            store.close()
    for decision in result.decisions:
        click.echo(f"{action_text(decision.action):<8} {decision.offload.label} ({decision.offload.uuid}), "
                   f"{decision.size} bytes: {mask_secret_text(decision.reason)}")  # fmt: skip
    going = [d for d in result.decisions if d.action in ("delete", "deleted")]
    failed = [d for d in result.decisions if d.action == "failed"]
    verb = "would delete" if result.dry_run else "deleted"
    summary = f"retention: {verb} {len(going)} offload(s), {sum(d.size for d in going)} bytes"
    if store is not None:
        summary += f"; {len(result.orphans)} orphan(s)"
    click.echo(summary + ("; dry run, add --execute to delete" if result.dry_run else ""), err=True)
    if failed:
        raise SystemExit(1)
