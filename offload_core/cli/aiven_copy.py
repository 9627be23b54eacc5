"""``offload kafka copy --layout aiven``: tier a partition directory's
segments as Aiven's tiered-storage plugin would, configured by the
broker's own properties file."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import click

from ..errors import ConfigError
from ..plugins import open_driver
from ..rsm.aiven.custom_metadata import CustomMetadataField
from ..rsm.aiven.segment_upload import copied_segments, upload_aiven_segment
from ..rsm.aiven.segment_writer import AivenWriteSettings, EncryptionKeyPair
from ..rsm.partition_dir import LocalSegment
from ..rsm.segment_copy import new_segment_metadata
from ..rsm.types import TopicIdPartition
from .ledger_store import sweep_before_rerun
from .options import parse_driver_options

_RSM_PREFIX_KEY = "remote.log.storage.manager.impl.prefix"
_SEPARATOR = re.compile(r"\s*[=:]\s*|\s+")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def aiven_write_settings_from_properties(path: Path) -> AivenWriteSettings:
    """The write settings in a broker's properties file: only the
    ``rsm.config.*`` keys a copy needs (``chunk.size``,
    ``compression.enabled``, ``compression.heuristic.enabled``,
    ``encryption.enabled`` with ``encryption.key.pair.id`` and its
    ``encryption.key.pairs.<id>.public.key.file``, ``key.prefix``,
    ``custom.metadata.fields.include``), with the plugin's defaults.

    A stand-in until the shared Aiven config module reads the whole file
    (backends included): replace this function with it. Raises
    :class:`ConfigError` naming the key for a missing or bad value."""
    properties = _read_properties(path)
    prefix = properties.get(_RSM_PREFIX_KEY, "rsm.config.")
    rsm = {key[len(prefix) :]: value for key, value in properties.items() if key.startswith(prefix)}
    where = f"{path}: {prefix}"
    if rsm.get("segment.format", "kafka") != "kafka":
        raise ConfigError(f"{where}segment.format is {rsm['segment.format']!r}; only 'kafka' segments can be copied")
    if "chunk.size" not in rsm:
        raise ConfigError(f"{where}chunk.size is not set; the plugin requires it")
    try:
        chunk_size = int(rsm["chunk.size"])
    except ValueError:
        raise ConfigError(f"{where}chunk.size is {rsm['chunk.size']!r}, not an integer") from None
    try:
        key_pair = _key_pair(rsm, where) if _flag(rsm, "encryption.enabled", where) else None
        fields = CustomMetadataField.parse(rsm.get("custom.metadata.fields.include", ""))
        return AivenWriteSettings(chunk_size, compression=_flag(rsm, "compression.enabled", where),
                                  compression_heuristic=_flag(rsm, "compression.heuristic.enabled", where),
                                  encryption=key_pair, key_prefix=rsm.get("key.prefix", ""),
                                  custom_metadata_fields=fields)  # fmt: skip
    except ConfigError as exc:
        message = str(exc)
        raise ConfigError(message if message.startswith(where) else f"{path}: {message}") from None


def copy_to_aiven(segments: list[LocalSegment], partition: TopicIdPartition, url: str, settings: AivenWriteSettings,
                  *, options: tuple[str, ...], max_decompressed_bytes: int, skipped_active: bool) -> None:  # fmt: skip
    """Copy ``segments`` of ``partition`` to ``url`` under ``settings``,
    skipping those already there (a manifest at the same start offset for
    the same ``.log`` size) and empty ones, and print what was done. A
    re-run first sweeps what a killed run left in the store's temporaries;
    a killed copy's objects without a manifest stay, unread by any reader."""
    name = partition.topic_partition
    with open_driver(url, **parse_driver_options(options)) as driver:
        sweep_before_rerun(driver)
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
                metadata = new_segment_metadata(partition, segment.data, next_offset=segment.next_offset, broker_id=0,
                                                event_timestamp_ms=time.time_ns() // 1_000_000,
                                                limit=max_decompressed_bytes)  # fmt: skip
                upload_aiven_segment(driver, settings, metadata, segment.data, limit=max_decompressed_bytes)
                copied += 1
    click.echo(f"{name} (topic id {partition.topic_id}): copied {copied} segment(s) in Aiven's layout, "
               f"{len(segments) - copied - empty} already there"
               + (f", {empty} empty segment(s) skipped" if empty else "")
               + (", active segment left (use --all for a stopped broker)" if skipped_active else ""))  # fmt: skip


def _flag(rsm: dict[str, str], key: str, where: str) -> bool:
    value = rsm.get(key, "false").strip().lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{where}{key} is {rsm[key]!r}; give true or false")
    return value == "true"


def _key_pair(rsm: dict[str, str], where: str) -> EncryptionKeyPair:
    key_pair_id = rsm.get("encryption.key.pair.id", "").strip()
    listed = [part.strip() for part in rsm.get("encryption.key.pairs", "").split(",")]
    if not key_pair_id or key_pair_id not in listed:
        raise ConfigError(f"{where}encryption.key.pair.id {key_pair_id!r} must be set and listed in "
                          "encryption.key.pairs when encryption.enabled is true")  # fmt: skip
    file_key = f"encryption.key.pairs.{key_pair_id}.public.key.file"
    if file_key not in rsm:
        raise ConfigError(f"{where}{file_key} is not set: new segments are encrypted for that public key")
    try:
        return EncryptionKeyPair(key_pair_id, Path(rsm[file_key].strip()).read_bytes())
    except OSError as exc:
        raise ConfigError(f"{where}{file_key}: cannot read {rsm[file_key]!r} ({exc.strerror})") from None


def _read_properties(path: Path) -> dict[str, str]:
    """The keys and values of a Java properties file: ``#``/``!``
    comments, ``=``, ``:`` or blanks between key and value, lines joined
    by a trailing backslash, backslash escapes; ISO-8859-1, as Kafka
    loads it."""
    try:
        text = path.read_text("latin-1")
    except OSError as exc:
        raise ConfigError(f"cannot read the properties file {path} ({exc.strerror})") from None
    properties: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            logical += line[:-1]
            continue
        logical += line
        key, value = _split_entry(logical)
        properties[key] = value
        logical = ""
    if logical:
        key, value = _split_entry(logical)
        properties[key] = value
    return properties


def _split_entry(line: str) -> tuple[str, str]:
    position = 0
    while position < len(line):
        if line[position] == "\\":
            position += 2
            continue
        found = _SEPARATOR.match(line, position)
        if found:
            return _unescape(line[:position]), _unescape(line[found.end() :])
        position += 1
    return _unescape(line), ""


def _unescape(text: str) -> str:
    def one(found: re.Match[str]) -> str:
        escaped = found[1]
        if len(escaped) == 5:
            return chr(int(escaped[1:], 16))
        return _ESCAPES.get(escaped, escaped)

    return _ESCAPE.sub(one, text)
