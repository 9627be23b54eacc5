"""``offload kafka ...``: Kafka log segments tiered to a store (KIP-405),
with no broker: copy a partition directory, list, read records by offset,
find offsets by timestamp, fetch raw indexes, clean up by time."""

from __future__ import annotations

import base64
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError, NotFoundError
from ..formats.kafka import DEFAULT_DECOMPRESSED_LIMIT
from ..plugins import default_plugin_manager, open_driver
from ..rsm import (
    IndexType,
    RemoteLogMetadataManager,
    RemoteStorageManager,
    TopicIdPartition,
    TopicPartition,
    list_partition,
    list_partitions,
    read_partition_dir,
)
from ..rsm.index_check import checked_index
from ..rsm.log_reader import Isolation, RemoteLogReader, RemoteRecord
from ..rsm.partition_dir import undecided_transaction
from ..rsm.remote_log import resolve_partition
from ..rsm.types import RemoteLogSegmentMetadata
from .ledger_commands import _cell, _open, sweep_before_rerun
from .options import driver_options, dry_run_footer, execute_option, metrics_port_option, parse_driver_options

_INDEX_TYPES = {"offset": IndexType.OFFSET, "timestamp": IndexType.TIMESTAMP,
                "producer-snapshot": IndexType.PRODUCER_SNAPSHOT, "transaction": IndexType.TRANSACTION,
                "leader-epoch": IndexType.LEADER_EPOCH}  # fmt: skip

prefix_option = click.option("--prefix", default="", help="Key prefix the segments live under in the store.")
decompressed_option = click.option(
    "--max-decompressed-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_DECOMPRESSED_LIMIT,
    show_default=True,
    help="Refuse a batch whose records decompress to more than this (a guard against damaged or hostile batches).",
)
topic_id_option = click.option(
    "--topic-id",
    default=None,
    help="Topic id (Kafka Uuid, or 'unknown' for segments copied before topic ids were kept): needed when the "
    "name has several in the store, a topic deleted and recreated.",
)
metadata_option = click.option(
    "--metadata",
    "metadata_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="SQLite file of a remote log metadata manager to record segment states in.",
)


@click.group()
def kafka() -> None:
    """Kafka log segments in a store (KIP-405 tiered storage)."""


def _manager(
    driver: Any, prefix: str, metadata_path: Path | None, max_decompressed_bytes: int = DEFAULT_DECOMPRESSED_LIMIT
) -> RemoteStorageManager:
    rlmm = RemoteLogMetadataManager(metadata_path) if metadata_path is not None else None
    return RemoteStorageManager(driver, prefix=prefix, metadata_manager=rlmm, emit=default_plugin_manager().emit,
                                max_decompressed_bytes=max_decompressed_bytes)  # fmt: skip


def _topic_partition(text: str) -> TopicPartition:
    try:
        return TopicPartition.parse(text)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="TOPIC-PARTITION") from None


def _resolved(driver: Any, prefix: str, text: str, topic_id: str | None) -> TopicIdPartition:
    """The partition TOPIC-PARTITION (and --topic-id) name in the store."""
    return resolve_partition(driver, prefix, _topic_partition(text), topic_id, option="--topic-id")


@kafka.command("copy")
@click.argument("partition_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("url")
@click.option("--all", "include_active", is_flag=True,
              help="Also copy the active (last) segment: only for a directory of a stopped broker.")  # fmt: skip
@click.option(
    "--topic-id",
    default=None,
    help="The topic's id (a Kafka Uuid); by default, the one the directory's partition.metadata names.",
)
@prefix_option
@metadata_option
@decompressed_option
@driver_options
@metrics_port_option
def copy(partition_dir: Path, url: str, include_active: bool, topic_id: str | None, prefix: str,
         metadata_path: Path | None, max_decompressed_bytes: int, options: tuple[str, ...]) -> None:  # fmt: skip
    """Tier the rolled segments of a Kafka partition directory to URL, under
    the topic's id (from --topic-id, else from the directory's
    partition.metadata, as Kafka writes it).

    Segments already copied (same offsets and size) are skipped, so a re-run
    copies only what is new; so are empty ones (an empty active segment
    right after a roll), which hold nothing to tier. It first removes the
    temporary files of a killed run (see `offload ledgers sweep`)."""
    topic_partition, segments = read_partition_dir(partition_dir, topic_id)
    chosen = [s for s in segments if include_active or not s.active]
    skipped_active = len(segments) - len(chosen)
    undecided = undecided_transaction(segments)
    if undecided is not None and any(s.next_offset > undecided.current_txn_first_offset for s in chosen):
        stable = undecided.current_txn_first_offset
        held = [s for s in chosen if s.next_offset > stable]
        chosen = chosen[: len(chosen) - len(held)]
        click.echo(f"{topic_partition.topic_partition}: stopping before segment {held[0].base_offset}: producer "
                   f"{undecided.producer_id}'s transaction from offset {stable} is not decided in the newest producer "
                   f"snapshot of {partition_dir}, so {stable} is the last stable offset the directory proves and "
                   "nothing from there is tiered (as Kafka); copy again once its marker is in a rolled segment",
                   err=True)  # fmt: skip
    with open_driver(url, **parse_driver_options(options)) as driver:
        sweep_before_rerun(driver)
        rsm = _manager(driver, prefix, metadata_path, max_decompressed_bytes)
        copied = empty = 0
        name = topic_partition.topic_partition
        try:
            with (
                rsm.holding_partition(topic_partition),
                click.progressbar(chosen, label=f"copying {name}", file=sys.stderr) as progress,
            ):
                done = {(m.metadata.start_offset, m.metadata.segment_size_in_bytes)
                        for m in list_partition(driver, prefix, topic_partition).segments}  # fmt: skip
                for segment in progress:
                    size = segment.data.log_segment.stat().st_size
                    if size == 0:
                        empty += 1  # Kafka tiers no empty segment: it holds no offset
                        continue
                    if (segment.base_offset, size) in done:
                        continue
                    rsm.copy_log_segment(topic_partition, segment.data, next_offset=segment.next_offset)
                    copied += 1
        finally:
            rsm.close()
    click.echo(f"{name} (topic id {topic_partition.topic_id}): copied {copied} segment(s), "
               f"{len(chosen) - copied - empty} already there"
               + (f", {empty} empty segment(s) skipped" if empty else "")
               + (", active segment left (use --all for a stopped broker)" if skipped_active else ""))  # fmt: skip


_UNREFERENCED = "COPY_SEGMENT_FINISHED, unreferenced (newer overlapping copies serve its offsets)"


def _named(tp: TopicIdPartition) -> str:
    return f"{tp.topic_partition} (topic id {tp.topic_id})" if tp.known else str(tp.topic_partition)


def _topic_id(tp: TopicIdPartition) -> str | None:
    return tp.topic_id if tp.known else None


def _row(meta: RemoteLogSegmentMetadata, state: str) -> dict[str, Any]:
    return {
        "topic_partition": str(meta.topic_partition),
        "topic_id": _topic_id(meta.topic_id_partition),
        "base_offset": meta.start_offset,
        "end_offset": meta.end_offset,
        "max_timestamp_ms": meta.max_timestamp_ms,
        "bytes": meta.segment_size_in_bytes,
        "leader_epochs": {str(e): o for e, o in sorted(meta.segment_leader_epochs.items())},
        "state": state,
        "segment_id": meta.segment_id.id,
    }


@kafka.command("ls")
@click.argument("url")
@click.argument("topic_partition", required=False)
@prefix_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per segment, one per line.")
@driver_options
def list_segments(url: str, topic_partition: str | None, prefix: str, as_json: bool, options: tuple[str, ...]) -> None:
    """List remote segments: topic id, offsets, max timestamp, size, state.
    Segments copied before topic ids were kept list their topic id as
    unknown (null in JSON); an older copy that newer overlapping ones
    replace (after a leader change) is listed as unreferenced: no offset is
    read from it, and cleanup removes it once it is old enough. An empty
    segment an earlier version tiered is listed as empty: it holds no
    offset, and deleting the partition removes it."""
    driver = _open(url, options)
    partitions = list_partitions(driver, prefix)
    if topic_partition:
        wanted = _topic_partition(topic_partition)
        partitions = [p for p in partitions if p.topic_partition == wanted]
    rows = []
    for tp in partitions:
        listing = list_partition(driver, prefix, tp)
        serving = {served.segment.segment_id for served in listing.served()}
        rows += [_row(m.metadata, "COPY_SEGMENT_FINISHED" if m.metadata.segment_id in serving else _UNREFERENCED)
                 for m in listing.segments]  # fmt: skip
        leftovers = [(u, f"incomplete ({u[2]} objects, no manifest: copying, failed or being deleted)")
                     for u in listing.uncommitted]  # fmt: skip
        leftovers += [(e, "empty (tiered by an earlier version; holds no offset)") for e in listing.legacy_empty]
        for (base, segment_id, _, size), state in leftovers:
            rows.append({"topic_partition": str(tp.topic_partition), "topic_id": _topic_id(tp), "base_offset": base,
                         "end_offset": None, "max_timestamp_ms": None, "bytes": size, "leader_epochs": None,
                         "segment_id": segment_id, "state": state})  # fmt: skip
    rows.sort(key=lambda row: (row["topic_partition"], row["base_offset"], row["segment_id"]))  # log order
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    width = max([len("PARTITION"), *(len(row["topic_partition"]) for row in rows)])
    click.echo(f"{'PARTITION':<{width}}  {'TOPIC ID':<22}  {'BASE':>20}  {'END':>20}  {'MAX TIMESTAMP':>13}  "
               f"{'BYTES':>12}  {'SEGMENT ID':<22}  STATE")  # fmt: skip
    for row in rows:
        click.echo(f"{row['topic_partition']:<{width}}  {row['topic_id'] or 'unknown':<22}  "
                   f"{_cell(row['base_offset']):>20}  {_cell(row['end_offset']):>20}  "
                   f"{_cell(row['max_timestamp_ms']):>13}  {_cell(row['bytes']):>12}  {row['segment_id']:<22}  "
                   f"{row['state']}")  # fmt: skip
    click.echo(f"{len(rows)} segment(s)", err=True)


def _b64(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode("ascii")


def record_json(remote: RemoteRecord) -> dict[str, Any]:
    """One record as ``offload kafka read --json`` prints it."""
    record = remote.record
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key_b64": _b64(record.key),
        "value_b64": _b64(record.value),
        "headers": [{"key": h.key, "value_b64": _b64(h.value)} for h in record.headers],
    }


def _text(value: bytes | None) -> str:
    if value is None:
        return "null"
    # One record per line: escape what would break the line or the columns.
    text = value.decode("utf-8", "backslashreplace")
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


@kafka.command("read")
@click.argument("url")
@click.argument("topic_partition")
@click.option("--offset", type=click.IntRange(min=0), required=True, help="First offset to read.")
@click.option("--max-bytes", type=click.IntRange(min=1), default=None,
              help="Stop after batches of about this many bytes (at least one batch).")  # fmt: skip
@click.option("--isolation", type=click.Choice([i.value for i in Isolation]), default="read_uncommitted",
              show_default=True, help="read_committed drops records of aborted transactions and stops at the "
                                      "first transaction not yet committed or aborted in the remote log.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object per record.")
@decompressed_option
@topic_id_option
@prefix_option
@driver_options
def read(url: str, topic_partition: str, offset: int, max_bytes: int | None, isolation: str, as_json: bool,
         max_decompressed_bytes: int, topic_id: str | None, prefix: str, options: tuple[str, ...]) -> None:  # fmt: skip
    """Print records of TOPIC-PARTITION from --offset on, across segments,
    each as soon as it is decoded. At the end of the remote log there is
    nothing to read yet (said on stderr, exit 0: Kafka's fetch is empty);
    past it, an error (Kafka's OFFSET_OUT_OF_RANGE)."""
    driver = _open(url, options)
    tp = _resolved(driver, prefix, topic_partition, topic_id)
    reader = RemoteLogReader(RemoteStorageManager(driver, prefix=prefix), tp)
    if not reader.segments:
        raise NotFoundError(
            f"no remote segments of {_named(tp)} under {url!r} (prefix {prefix!r}): check the URL and prefix"
        )
    for remote in reader.records(offset, max_bytes=max_bytes, isolation=Isolation(isolation),
                                 max_decompressed_bytes=max_decompressed_bytes):  # fmt: skip
        if as_json:
            click.echo(json.dumps(record_json(remote)))
        else:
            r = remote.record
            click.echo(f"{r.offset}\t{r.timestamp}\t{_text(r.key)}\t{_text(r.value)}")
    if offset == reader.log_end_offset:
        click.echo(f"offset {offset} is the end of the remote log of {tp.topic_partition} (its last offset is "
                   f"{offset - 1}): nothing to read yet", err=True)  # fmt: skip
    undecided = reader.undecided_transaction if Isolation(isolation) is Isolation.READ_COMMITTED else None
    if undecided is not None:
        click.echo(f"read_committed stops before offset {undecided.current_txn_first_offset}, the last stable "
                   f"offset: producer {undecided.producer_id}'s transaction begun there has no commit or abort "
                   "marker in the remote log yet", err=True)  # fmt: skip


@kafka.command("offsets")
@click.argument("url")
@click.argument("topic_partition")
@click.option("--timestamp", type=int, required=True,
              help="Milliseconds since the epoch; or Kafka's -1 latest, -2 earliest, -3 max timestamp.")  # fmt: skip
@decompressed_option
@topic_id_option
@prefix_option
@driver_options
def offsets(url: str, topic_partition: str, timestamp: int, max_decompressed_bytes: int, topic_id: str | None,
            prefix: str, options: tuple[str, ...]) -> None:  # fmt: skip
    """The first offset whose timestamp is at least --timestamp, as JSON
    (nulls when every record is older), or Kafka's answer to its special
    timestamps (-1 latest: the end offset, -2 earliest: the start offset,
    both with timestamp -1; -3: the record with the largest timestamp).
    Any other negative timestamp is an error."""
    driver = _open(url, options)
    tp = _resolved(driver, prefix, topic_partition, topic_id)
    reader = RemoteLogReader(RemoteStorageManager(driver, prefix=prefix), tp)
    found = reader.offset_for_timestamp(timestamp, max_decompressed_bytes=max_decompressed_bytes)
    click.echo(json.dumps({"offset": found.offset if found else None, "timestamp": found.timestamp if found else None}))


@kafka.command("fetch-index")
@click.argument("url")
@click.argument("topic_partition")
@click.argument("base_offset", type=click.IntRange(min=0))
@click.option("--type", "index_type", type=click.Choice(list(_INDEX_TYPES)), required=True)
@topic_id_option
@prefix_option
@driver_options
def fetch_index(url: str, topic_partition: str, base_offset: int, index_type: str, topic_id: str | None, prefix: str,
                options: tuple[str, ...]) -> None:  # fmt: skip
    """Write a remote segment's index, byte for byte, to stdout, once it is
    checked: the size its manifest recorded, decoding as its type, and (the
    offset index, reading the log once) every entry at the batch it names.
    A damaged or altered index is a one-line error and nothing is written."""
    driver = _open(url, options)
    tp = _resolved(driver, prefix, topic_partition, topic_id)
    rsm = RemoteStorageManager(driver, prefix=prefix)
    matching = [s for s in rsm.list_remote_segments(tp) if s.start_offset == base_offset]
    if not matching:
        raise NotFoundError(
            f"{_named(tp)} has no remote segment with base offset {base_offset}: see `offload kafka ls`"
        )
    data = checked_index(rsm, matching[0], _INDEX_TYPES[index_type])
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


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


@kafka.command("cleanup")
@click.argument("url")
@click.argument("topic_partition")
@click.option("--until", "until", required=True, help="Delete segments whose newest record is older (ISO time or ms).")
@execute_option()
@topic_id_option
@prefix_option
@metadata_option
@driver_options
def cleanup(url: str, topic_partition: str, until: str, execute: bool, topic_id: str | None, prefix: str,
            metadata_path: Path | None, options: tuple[str, ...]) -> None:  # fmt: skip
    """Delete the oldest segments older than --until (and the unreferenced
    older copies that are), with --execute; without it, a dry run. Each
    segment that goes (or would) is named on stderr; stdout is one JSON
    object: dry_run, the segments and bytes that go, deleted_segments (0 in
    a dry run) and the log start offset after the cleanup."""
    driver = _open(url, options)
    tp = _resolved(driver, prefix, topic_partition, topic_id)
    rsm = _manager(driver, prefix, metadata_path)
    try:
        going, start = rsm.cleanup_plan(tp, _until_ms(until))
        verb = "deleting" if execute else "would delete"
        for segment in going:
            click.echo(f"{verb} segment {segment.start_offset}-{segment.end_offset} of {_named(tp)} "
                       f"({segment.segment_size_in_bytes} bytes, id {segment.segment_id.id})", err=True)  # fmt: skip
            if execute:
                rsm.delete_log_segment(segment)
    finally:
        rsm.close()
    size = sum(segment.segment_size_in_bytes for segment in going)
    click.echo(json.dumps({"dry_run": not execute, "segments": len(going), "bytes": size,
                           "deleted_segments": len(going) if execute else 0, "log_start_offset": start}))  # fmt: skip
    if not execute:
        click.echo(dry_run_footer(f"these {len(going)} segment(s), {size} bytes"), err=True)
