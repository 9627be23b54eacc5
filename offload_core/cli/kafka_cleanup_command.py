"""``offload kafka cleanup``: delete remote segments older than a time,
in our layout or Aiven's plugin's; a dry run unless ``--execute``."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import click

from .kafka_read_commands import named
from .kafka_source import metadata_option, open_store, shift_url, store_options, topic_id_option
from .options import dry_run_footer, execute_option

__all__ = ["cleanup"]


def _until_ms(text: str) -> int:
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is neither milliseconds nor an ISO time", param_hint="--until") from None
    if moment.tzinfo is None:
        raise click.BadParameter(f"{text!r} has no time zone: add one (e.g. Z or +02:00)", param_hint="--until")
    return int(moment.timestamp() * 1000)


@click.command("cleanup")
@click.argument("url", required=False)
@click.argument("topic_partition", required=False)
@click.option("--until", "until", required=True, help="Delete segments whose newest record is older (ISO time or ms).")
@execute_option()
@click.option("--json", "as_json", is_flag=True,
              help="Each segment that goes (or would) as a JSON object on stdout, before the summary.")  # fmt: skip
@topic_id_option
@metadata_option
@store_options
def cleanup(url: str | None, topic_partition: str | None, until: str, execute: bool, as_json: bool,
            topic_id: str | None,
            metadata_path: Path | None, layout: str, config_path: Path | None, prefix: str | None,
            options: tuple[str, ...]) -> None:  # fmt: skip
    """Delete the oldest segments older than --until (and the unreferenced
    older copies that are), with --execute; without it, a dry run. Each
    segment that goes (or would) is named on stderr, or with --json is a
    JSON object on stdout (topic_partition, topic_id, segment_id,
    start_offset, end_offset, bytes, dry_run); stdout ends with one JSON
    object, with or without --json: dry_run, the segments and bytes that
    go, deleted_segments (0 in a dry run) and the log start offset after
    the cleanup."""
    url, topic_partition = shift_url(config_path, url, topic_partition)
    if topic_partition is None:
        raise click.UsageError("Missing argument 'TOPIC_PARTITION'.")
    until_ms = _until_ms(until)
    store = open_store(url, config_path, layout, prefix, options, metadata_path=metadata_path, emit_events=True)
    segments = store.segments
    tp = store.resolve(topic_partition, topic_id)
    try:
        going, start = segments.cleanup_plan(tp, until_ms)
        verb = "deleting" if execute else "would delete"
        for segment in going:
            if as_json:
                click.echo(json.dumps({"topic_partition": str(tp.topic_partition),
                                       "topic_id": tp.topic_id if tp.known else None,
                                       "segment_id": segment.segment_id.id, "start_offset": segment.start_offset,
                                       "end_offset": segment.end_offset, "bytes": segment.segment_size_in_bytes,
                                       "dry_run": not execute}))  # fmt: skip
            else:
                click.echo(f"{verb} segment {segment.start_offset}-{segment.end_offset} of {named(tp)} "
                           f"({segment.segment_size_in_bytes} bytes, id {segment.segment_id.id})",
                           err=True)  # fmt: skip
            if execute:
                segments.delete_log_segment(segment)
    finally:
        segments.close()
    size = sum(segment.segment_size_in_bytes for segment in going)
    click.echo(json.dumps({"dry_run": not execute, "segments": len(going), "bytes": size,
                           "deleted_segments": len(going) if execute else 0, "log_start_offset": start}))  # fmt: skip
    if not execute:
        click.echo(dry_run_footer(f"these {len(going)} segment(s), {size} bytes"), err=True)
