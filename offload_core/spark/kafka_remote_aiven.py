"""``kafka-remote`` over segments Aiven's plugin tiered (``.option("layout",
"aiven")``): the store and keys from the broker's properties file
(``.option("config", PATH)``, each ``rsm.config.*`` option replacing the
file's key), partitions planned from each segment's decoded offset index,
and each partition's bytes decoded from the chunks holding them."""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..formats import kafka
from ..rsm.aiven.config import RSM_CONFIG_PREFIX, AivenConfig, load_config, parse_config
from ..rsm.aiven.keys import ObjectKey
from ..rsm.aiven.log_stream import AivenLogStream
from ..rsm.aiven.segment_reader import AivenSegmentReader
from ..rsm.aiven.storage import AivenRemoteStorage
from ..rsm.settings import DEFAULT_BUFFER_SIZE
from ..rsm.types import RemoteLogSegmentMetadata
from ..storage import StorageDriver

__all__ = ["AivenSegmentSpec", "aiven_config", "aiven_stream", "planned_ranges", "segment_spec"]


@dataclass(frozen=True)
class AivenSegmentSpec:
    """What an executor needs to decode one segment's chunks: its manifest
    and the private keys of the store's key pairs (never printed)."""

    manifest_key: ObjectKey
    manifest_bytes: bytes
    private_keys: tuple[tuple[str, bytes], ...] = ()

    def __repr__(self) -> str:
        return f"AivenSegmentSpec({self.manifest_key.key!r})"


def aiven_config(options: Mapping[str, str]) -> AivenConfig | None:
    """The plugin's configuration the options give: ``config`` (a broker
    properties file) and ``rsm.config.*`` keys over it; None when they give
    none. Raises :class:`ConfigError` as the config's reader does."""
    overrides = {k: v for k, v in options.items() if k.lower().startswith(RSM_CONFIG_PREFIX)}
    if options.get("config"):
        return load_config(Path(options["config"]), overrides)
    if overrides:
        return parse_config(overrides)
    return None


def segment_spec(storage: AivenRemoteStorage, metadata: RemoteLogSegmentMetadata,
                 private_keys: Mapping[str, bytes]) -> AivenSegmentSpec:  # fmt: skip
    segment = storage.segment(metadata)
    return AivenSegmentSpec(segment.key, segment.manifest_bytes, tuple(sorted(private_keys.items())))


def planned_ranges(storage: AivenRemoteStorage, metadata: RemoteLogSegmentMetadata, first: int, end: int,
                   bytes_per_partition: int) -> list[tuple[int, int, int, int]]:  # fmt: skip
    """Byte ranges ``[start, stop)`` of the segment's original ``.log`` that
    together hold offsets ``[first, end)``, cut at batches the offset index
    names, about ``bytes_per_partition`` each, each widened to whole chunks
    when read; with each, ``[low, high)``, offsets within ``[first, end)``
    that include every one whose batch starts in the range (neighbouring
    ranges' spans may overlap by the unindexed batches between two index
    entries: a reader keeps only the batches in its own bytes, so a record
    is still read once). Raises :class:`FormatError` for an offset index
    that does not decode or fit the segment."""
    entries = storage.offset_index(metadata)
    floor = kafka.IndexEntry(metadata.start_offset, 0)
    if first > metadata.start_offset:
        floor = kafka.lookup_offset(entries, first, metadata.start_offset)
    stop = storage.log_size(metadata)
    for entry, after in zip(entries, entries[1:], strict=False):
        if entry.offset >= end - 1:  # an entry names its append's last offset: later appends hold later ones
            stop = after.position
            break
    # An entry names its append's last offset: the append at its position starts at or before that offset
    # (so the bytes before it hold only smaller ones), and after the previous entry's offset.
    cuts = [(floor.position, first, end)]  # (position, lowest offset from there, the entry's offset)
    for before, entry in zip([None, *entries], entries, strict=False):
        if cuts[-1][0] < entry.position < stop and entry.position - cuts[-1][0] >= bytes_per_partition:
            cuts.append((entry.position, metadata.start_offset if before is None else before.offset + 1, entry.offset))
    ranges = []
    for (start, low, _), (until, _, high) in zip(cuts, [*cuts[1:], (stop, end, end)], strict=True):
        low, high = max(first, low), min(end, high)
        if start < until and low < high:
            ranges.append((start, until, low, high))
    return ranges


def aiven_stream(spec: AivenSegmentSpec, driver: StorageDriver, start: int, stop: int) -> io.RawIOBase:
    """Original bytes ``[start, stop)`` of the segment, from its chunks."""
    reader = AivenSegmentReader(driver.read, spec.manifest_key, spec.manifest_bytes, dict(spec.private_keys))
    return AivenLogStream(reader, driver, start, stop, buffer_size=DEFAULT_BUFFER_SIZE)
