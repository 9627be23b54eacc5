"""``offload kafka ls | read | offsets | fetch-index``: reading remote
segments, in our layout or Aiven's plugin's (``--layout aiven``), from a
URL or the broker's properties file (``--config``)."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..errors import NotFoundError
from ..rsm.isolation import Isolation
from .kafka_source import (
    KafkaStore,
    decompressed_option,
    open_store,
    shift_url,
    store_options,
    topic_id_option,
    topic_partition_of,
)

# The segments, their readers and the Aiven layout (and its crypto) load
# when a verb reads a store, not to parse its arguments or print its help.
if TYPE_CHECKING:
    from ..rsm.log_reader import RemoteLogReader, RemoteRecord
    from ..rsm.types import RemoteLogSegmentMetadata, TopicIdPartition

__all__ = ["fetch_index", "list_segments", "offsets", "read", "record_json"]

# --type's choices, each the name of its IndexType member.
_INDEX_TYPES = {"offset": "OFFSET", "timestamp": "TIMESTAMP", "producer-snapshot": "PRODUCER_SNAPSHOT",
                "transaction": "TRANSACTION", "leader-epoch": "LEADER_EPOCH"}  # fmt: skip
_UNREFERENCED = "COPY_SEGMENT_FINISHED, unreferenced (newer overlapping copies serve its offsets)"


def named(tp: TopicIdPartition) -> str:
    return f"{tp.topic_partition} (topic id {tp.topic_id})" if tp.known else str(tp.topic_partition)


def _topic_id(tp: TopicIdPartition) -> str | None:
    return tp.topic_id if tp.known else None


def _row(tp: TopicIdPartition, start: int, end: int | None, segment_id: str, size: int, state: str,
         meta: RemoteLogSegmentMetadata | None = None) -> dict[str, Any]:  # fmt: skip
    return {"topic": tp.topic, "partition": tp.partition, "topic_partition": str(tp.topic_partition),
            "topic_id": _topic_id(tp), "start_offset": start, "base_offset": start, "end_offset": end,
            "max_timestamp_ms": meta.max_timestamp_ms if meta else None, "size": size, "bytes": size,
            "leader_epochs": {str(e): o for e, o in sorted(meta.segment_leader_epochs.items())} if meta else None,
            "state": state, "segment_id": segment_id}  # fmt: skip


def _segment_row(meta: RemoteLogSegmentMetadata, serving: set[str]) -> dict[str, Any]:
    state = "COPY_SEGMENT_FINISHED" if meta.segment_id.id in serving else _UNREFERENCED
    tp = meta.topic_id_partition
    return _row(tp, meta.start_offset, meta.end_offset, meta.segment_id.id, meta.segment_size_in_bytes, state, meta)


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def _rows(store: KafkaStore, wanted: str | None) -> list[dict[str, Any]]:
    from ..rsm.aiven.storage import AivenRemoteStorage
    from ..rsm.remote_log import list_partition, list_partitions

    segments = store.segments
    chosen = topic_partition_of(wanted) if wanted else None
    rows = []
    if isinstance(segments, AivenRemoteStorage):
        listing = segments.listing
        for tp in listing.partitions():
            if chosen is not None and tp.topic_partition != chosen:
                continue
            serving = {served.segment.segment_id.id for served in listing.served(tp)}
            rows += [_segment_row(s.metadata, serving) for s in listing.segments.get(tp, [])]
            rows += [_row(tp, left.key.start_offset, None, left.key.segment_id, left.stored_bytes, left.state)
                     for left in listing.leftovers.get(tp, [])]  # fmt: skip
        return rows
    driver = segments.driver
    for tp in list_partitions(driver, store.prefix):
        if chosen is not None and tp.topic_partition != chosen:
            continue
        ours = list_partition(driver, store.prefix, tp)
        serving = {served.segment.segment_id.id for served in ours.served()}
        rows += [_segment_row(m.metadata, serving) for m in ours.segments]
        rows += [_row(tp, base, None, segment_id, size,
                      f"incomplete ({count} objects, no manifest: copying, failed or being deleted)")
                 for base, segment_id, count, size in ours.uncommitted]  # fmt: skip
        rows += [_row(tp, base, None, segment_id, size, "empty (tiered by an earlier version; holds no offset)")
                 for base, segment_id, _, size in ours.legacy_empty]  # fmt: skip
    return rows


@click.command("ls")
@click.argument("url", required=False)
@click.argument("topic_partition", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per segment, one per line.")
@store_options
def list_segments(url: str | None, topic_partition: str | None, as_json: bool, layout: str,
                  config_path: Path | None, prefix: str | None, options: tuple[str, ...]) -> None:  # fmt: skip
    """List remote segments: topic id, offsets, max timestamp, size, state.
    Segments copied before topic ids were kept list their topic id as
    unknown (null in JSON); an older copy that newer overlapping ones
    replace (after a leader change, or a retried copy) is listed as
    unreferenced: no offset is read from it, and cleanup removes it once it
    is old enough. Copies without a manifest (uploading, failed, being
    deleted) are listed as incomplete; so, in the aiven layout, are
    manifests whose .log or .indexes is gone (being deleted). An empty
    segment an earlier version tiered is listed as empty."""
    if url is not None and "://" not in url and topic_partition is None and config_path is not None:
        url, topic_partition = None, url
    store = open_store(url, config_path, layout, prefix, options)
    rows = _rows(store, topic_partition)
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


def _partition_args(config_path: Path | None, url: str | None, topic_partition: str | None) -> tuple[str | None, str]:
    url, topic_partition = shift_url(config_path, url, topic_partition)
    if topic_partition is None:
        raise click.UsageError("Missing argument 'TOPIC_PARTITION'.")
    return url, topic_partition


def _reader(url: str | None, topic_partition: str | None, topic_id: str | None, layout: str,
            config_path: Path | None, prefix: str | None, options: tuple[str, ...]) -> RemoteLogReader:  # fmt: skip
    from ..rsm.log_reader import RemoteLogReader

    url, text = _partition_args(config_path, url, topic_partition)
    store = open_store(url, config_path, layout, prefix, options)
    tp = store.resolve(text, topic_id)
    return RemoteLogReader(store.segments, tp)


@click.command("read")
@click.argument("url", required=False)
@click.argument("topic_partition", required=False)
@click.option("--offset", type=click.IntRange(min=0), required=True, help="First offset to read.")
@click.option("--max-bytes", type=click.IntRange(min=1), default=None,
              help="Stop after batches of about this many bytes (at least one batch).")  # fmt: skip
@click.option("--isolation", type=click.Choice([i.value for i in Isolation]), default="read_uncommitted",
              show_default=True, help="read_committed drops records of aborted transactions and stops at the "
                                      "first transaction not yet committed or aborted in the remote log.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON object per record.")
@decompressed_option
@topic_id_option
@store_options
def read(url: str | None, topic_partition: str | None, offset: int, max_bytes: int | None, isolation: str,
         as_json: bool, max_decompressed_bytes: int, topic_id: str | None, layout: str, config_path: Path | None,
         prefix: str | None, options: tuple[str, ...]) -> None:  # fmt: skip
    """Print records of TOPIC-PARTITION from --offset on, across segments,
    each as soon as it is decoded. At the end of the remote log there is
    nothing to read yet (said on stderr, exit 0: Kafka's fetch is empty);
    past it, an error (Kafka's OFFSET_OUT_OF_RANGE)."""
    reader = _reader(url, topic_partition, topic_id, layout, config_path, prefix, options)
    tp = reader.topic_id_partition
    if not reader.segments:
        raise NotFoundError(f"no remote segments of {named(tp)} in the store: check the URL (or --config) and prefix")
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


@click.command("offsets")
@click.argument("url", required=False)
@click.argument("topic_partition", required=False)
@click.option("--timestamp", type=int, required=True,
              help="Milliseconds since the epoch; or Kafka's -1 latest, -2 earliest, -3 max timestamp.")  # fmt: skip
@decompressed_option
@topic_id_option
@store_options
def offsets(url: str | None, topic_partition: str | None, timestamp: int, max_decompressed_bytes: int,
            topic_id: str | None, layout: str, config_path: Path | None, prefix: str | None,
            options: tuple[str, ...]) -> None:  # fmt: skip
    """The first offset whose timestamp is at least --timestamp, as JSON
    (nulls when every record is older), or Kafka's answer to its special
    timestamps (-1 latest: the end offset, -2 earliest: the start offset,
    both with timestamp -1; -3: the record with the largest timestamp).
    Any other negative timestamp is an error."""
    reader = _reader(url, topic_partition, topic_id, layout, config_path, prefix, options)
    found = reader.offset_for_timestamp(timestamp, max_decompressed_bytes=max_decompressed_bytes)
    click.echo(json.dumps({"offset": found.offset if found else None, "timestamp": found.timestamp if found else None}))


@click.command("fetch-index")
@click.argument("url", required=False)
@click.argument("topic_partition", required=False)
@click.argument("base_offset", required=False)
@click.option("--type", "index_type", type=click.Choice(list(_INDEX_TYPES)), required=True)
@topic_id_option
@store_options
def fetch_index(url: str | None, topic_partition: str | None, base_offset: str | None, index_type: str,
                topic_id: str | None, layout: str, config_path: Path | None, prefix: str | None,
                options: tuple[str, ...]) -> None:  # fmt: skip
    """Write a remote segment's index, byte for byte, to stdout, once it is
    checked: the size its manifest recorded (our layout; the plugin's
    decrypts only whole), decoding as its type, and (the offset index,
    reading the log once) every entry at the batch it names. A damaged or
    altered index is a one-line error and nothing is written."""
    from ..rsm.index_check import checked_index
    from ..rsm.types import IndexType

    url, topic_partition, base_offset = shift_url(config_path, url, topic_partition, base_offset)
    if topic_partition is None or base_offset is None:
        raise click.UsageError("Missing argument: give [URL] TOPIC_PARTITION BASE_OFFSET.")
    if not base_offset.isdigit():
        raise click.BadParameter(f"{base_offset!r} is not an offset", param_hint="BASE_OFFSET")
    store = open_store(url, config_path, layout, prefix, options)
    tp = store.resolve(topic_partition, topic_id)
    matching = [s for s in store.segments.list_remote_segments(tp) if s.start_offset == int(base_offset)]
    if not matching:
        raise NotFoundError(f"{named(tp)} has no remote segment with base offset {base_offset}: see `offload kafka ls`")
    data = checked_index(store.segments, matching[0], IndexType[_INDEX_TYPES[index_type]])
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
