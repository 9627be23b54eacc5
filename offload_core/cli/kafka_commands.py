"""``offload kafka ...``: Kafka log segments tiered to a store (KIP-405),
with no broker: copy a partition directory (here), and, in our layout or
Aiven's plugin's, list, read records by offset, find offsets by timestamp,
fetch raw indexes (:mod:`.kafka_read_commands`) and clean up by time
(:mod:`.kafka_cleanup_command`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..formats.kafka_codecs import DEFAULT_DECOMPRESSED_LIMIT
from ..plugins import default_plugin_manager, open_driver
from .kafka_cleanup_command import cleanup
from .kafka_read_commands import fetch_index, list_segments, offsets, read
from .kafka_source import AIVEN, OURS, decompressed_option, metadata_option
from .ledger_store import sweep_before_rerun
from .options import driver_options, metrics_port_option, parse_driver_options

# The storage manager and the partition directory's reader load when
# `kafka copy` runs, not to parse its arguments or print its help.
if TYPE_CHECKING:
    from ..rsm.storage_manager import RemoteStorageManager
    from .aiven_copy import AivenCopyTarget

copy_prefix_option = click.option("--prefix", default="", help="Key prefix the segments live under in the store.")


@click.group()
def kafka() -> None:
    """Kafka log segments in a store (KIP-405 tiered storage)."""


def _manager(
    driver: Any, prefix: str, metadata_path: Path | None, max_decompressed_bytes: int = DEFAULT_DECOMPRESSED_LIMIT
) -> RemoteStorageManager:
    from ..rsm.metadata_manager import RemoteLogMetadataManager
    from ..rsm.storage_manager import RemoteStorageManager

    rlmm = RemoteLogMetadataManager(metadata_path) if metadata_path is not None else None
    return RemoteStorageManager(driver, prefix=prefix, metadata_manager=rlmm, emit=default_plugin_manager().emit,
                                max_decompressed_bytes=max_decompressed_bytes)  # fmt: skip


@kafka.command("copy")
@click.argument("partition_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("url", required=False)
@click.option("--all", "include_active", is_flag=True,
              help="Also copy the active (last) segment: only for a directory of a stopped broker.")  # fmt: skip
@click.option(
    "--topic-id",
    default=None,
    help="The topic's id (a Kafka Uuid); by default, the one the directory's partition.metadata names.",
)
@copy_prefix_option
@metadata_option
@decompressed_option
@click.option("--layout", type=click.Choice([OURS, AIVEN]), default=OURS, show_default=True,
              help="Object layout: ours, or Aiven's tiered-storage plugin's (needs --config).")  # fmt: skip
@click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="With --layout aiven: the broker's properties file, whose rsm.config.* keys say where "
                   "(storage.backend.class, storage.*; then URL may be omitted) and how the plugin writes "
                   "segments (chunk size, compression, encryption, key prefix).")  # fmt: skip
@driver_options
@metrics_port_option
def copy(partition_dir: Path, url: str | None, include_active: bool, topic_id: str | None, prefix: str,
         metadata_path: Path | None, max_decompressed_bytes: int, layout: str, config_path: Path | None,
         options: tuple[str, ...]) -> None:  # fmt: skip
    """Tier the rolled segments of a Kafka partition directory to URL, under
    the topic's id (from --topic-id, else from the directory's
    partition.metadata, as Kafka writes it).

    Segments already copied (same offsets and size) are skipped, so a re-run
    copies only what is new; so are empty ones (an empty active segment
    right after a roll), which hold nothing to tier. It first removes the
    temporary files of a killed run (see `offload ledgers sweep`).

    With --layout aiven the segments are written as Aiven's plugin writes
    them, configured by --config, to the store its storage.backend.class
    names unless URL is given (its key.prefix replaces --prefix; no
    --metadata: the broker's metadata topic holds those states)."""
    from ..rsm.partition_dir import read_partition_dir, undecided_transaction
    from ..rsm.remote_log import list_partition

    aiven_target = _aiven_copy_target(layout, config_path, url, prefix, metadata_path, options)
    if aiven_target is None and url is None:
        raise click.UsageError("give the store's URL (only --layout aiven takes it from --config)")
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
    if aiven_target is not None:
        from .aiven_copy import copy_to_aiven

        copy_to_aiven(chosen, topic_partition, aiven_target, max_decompressed_bytes=max_decompressed_bytes,
                      skipped_active=bool(skipped_active))  # fmt: skip
        return
    assert url is not None
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


def _aiven_copy_target(layout: str, config_path: Path | None, url: str | None, prefix: str,
                       metadata_path: Path | None, options: tuple[str, ...]) -> AivenCopyTarget | None:  # fmt: skip
    if layout != AIVEN:
        if config_path is not None:
            raise click.UsageError("--config is for --layout aiven")
        return None  # the Aiven modules (and their crypto) load only for --layout aiven
    if config_path is None or prefix or metadata_path is not None:
        raise click.UsageError("--layout aiven takes --config FILE (the broker's properties), and neither --prefix "
                               "(its rsm.config.key.prefix is the prefix) nor --metadata")  # fmt: skip
    from .aiven_copy import aiven_copy_target

    return aiven_copy_target(config_path, url, options)


for _verb in (list_segments, read, offsets, fetch_index, cleanup):
    kafka.add_command(_verb)
