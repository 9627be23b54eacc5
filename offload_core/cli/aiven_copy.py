"""``offload kafka copy --layout aiven``: tier a partition directory's
segments as Aiven's tiered-storage plugin would, configured by the
broker's own properties file."""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from ..errors import ConfigError
from ..plugins import open_driver
from ..rsm import copy_lease
from ..rsm.aiven.config import AivenConfig, load_config
from ..rsm.aiven.keys import copier_lease_path
from ..rsm.aiven.segment_upload import copied_segments, upload_aiven_segment
from ..rsm.aiven.segment_writer import AivenWriteSettings, EncryptionKeyPair
from ..rsm.object_records import ObjectRecordStore
from ..rsm.partition_dir import LocalSegment
from ..rsm.segment_copy import new_segment_metadata
from ..rsm.types import TopicIdPartition
from .ledger_store import sweep_before_rerun
from .options import parse_driver_options


@dataclass(frozen=True)
class AivenCopyTarget:
    """Where and how a copy writes: the store (the config's
    ``storage.backend.class`` and ``storage.*``, or the URL given) with
    its driver options (may hold credentials: never print them), and the
    write settings."""

    url: str
    driver_options: dict[str, Any] = field(repr=False)
    settings: AivenWriteSettings


def aiven_copy_target(config_path: Path, url: str | None, options: tuple[str, ...]) -> AivenCopyTarget:
    """The copy target the broker properties file ``config_path`` gives,
    read by the same parser as every reading verb: a ``url`` given
    replaces its store (then only ``options`` configure the driver),
    else ``-o`` ``options`` add to the driver options it maps. Raises
    :class:`ConfigError` naming the file and key of a bad value."""
    config = load_config(config_path)
    try:
        settings = aiven_write_settings(config)
    except ConfigError as error:
        raise ConfigError(f"{config_path}: {error}") from None
    given = parse_driver_options(options)
    if url is not None:
        return AivenCopyTarget(url, given, settings)
    return AivenCopyTarget(config.url, {**config.driver_options, **given}, settings)


def aiven_write_settings(config: AivenConfig) -> AivenWriteSettings:
    """How the plugin configured by ``config`` writes a segment. Raises
    :class:`ConfigError` naming the key when ``chunk.size`` is unset (the
    plugin requires it) or the active pair's public key file does not
    read or hold a key."""
    if config.chunk_size is None:
        raise ConfigError(f"{config.rsm_prefix}chunk.size is not set; the plugin requires it to write segments")
    key_pair = None
    if config.active_key_pair_id is not None and config.active_public_key_file is not None:
        path = config.active_public_key_file
        try:
            public_key = path.read_bytes()
        except OSError as exc:
            file_key = f"{config.rsm_prefix}encryption.key.pairs.{config.active_key_pair_id}.public.key.file"
            raise ConfigError(f"{file_key}: cannot read {str(path)!r} ({exc.strerror})") from None
        key_pair = EncryptionKeyPair(config.active_key_pair_id, public_key)
    return AivenWriteSettings(config.chunk_size, compression=config.compression,
                              compression_heuristic=config.compression_heuristic, encryption=key_pair,
                              key_prefix=config.key_prefix,
                              custom_metadata_fields=config.custom_metadata_fields)  # fmt: skip


def copy_to_aiven(segments: list[LocalSegment], partition: TopicIdPartition, target: AivenCopyTarget,
                  *, max_decompressed_bytes: int, skipped_active: bool) -> None:  # fmt: skip
    """Copy ``segments`` of ``partition`` to ``target``,
    skipping those already there (a manifest at the same start offset for
    the same ``.log`` size) and empty ones, and print what was done. A
    re-run first sweeps what a killed run left in the store's temporaries;
    a killed copy's objects without a manifest stay, unread by any reader.

    The copy holds the partition's copier lease (:mod:`offload_core.rsm.copy_lease`)
    in the store itself, under the key prefix's
    :data:`~offload_core.rsm.aiven.keys.COPIER_LEASES`, which the plugin never reads,
    so two copies of one partition never both commit the same offsets.
    Raises :class:`ConflictError` naming the holder, having written
    nothing, when another live copy holds it."""
    name = partition.topic_partition
    settings = target.settings
    owner = uuid.uuid4().hex
    with open_driver(target.url, **target.driver_options) as driver:
        sweep_before_rerun(driver)
        leases = ObjectRecordStore(driver)
        lease = copier_lease_path(settings.key_prefix, name.topic, partition.topic_id, name.partition)
        copy_lease.take(leases, lease, owner, _now_ms(), str(partition))
        try:
            done = copied_segments(driver, settings.key_prefix, partition)
            copied = empty = 0
            with click.progressbar(segments, label=f"copying {name}", file=sys.stderr) as progress:
                for segment in progress:
                    size = segment.data.log_segment.stat().st_size
                    if size == 0:
                        empty += 1  # Kafka tiers no empty segment: it holds no offset
                        continue
                    if (segment.base_offset, size) in done:
                        continue
                    copy_lease.take(leases, lease, owner, _now_ms(), str(partition))  # renewed per segment
                    metadata = new_segment_metadata(partition, segment.data, next_offset=segment.next_offset,
                                                    broker_id=0, event_timestamp_ms=_now_ms(),
                                                    limit=max_decompressed_bytes)  # fmt: skip
                    upload_aiven_segment(driver, settings, metadata, segment.data, limit=max_decompressed_bytes)
                    copied += 1
        finally:
            copy_lease.give_back(leases, lease, owner)
    click.echo(f"{name} (topic id {partition.topic_id}): copied {copied} segment(s) in Aiven's layout, "
               f"{len(segments) - copied - empty} already there"
               + (f", {empty} empty segment(s) skipped" if empty else "")
               + (", active segment left (use --all for a stopped broker)" if skipped_active else ""))  # fmt: skip


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
