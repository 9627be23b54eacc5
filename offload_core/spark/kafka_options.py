"""The ``kafka-remote`` source's options, parsed and checked (no Spark and no
store needed): ours, and those of Spark's own Kafka source that mean
something for a tiered copy, with Spark's names, JSON forms and defaults.

Spark hands a Python data source its options in a case-insensitive map, so
names are matched without regard to case here too. A Kafka option with no
meaning for a tiered copy (``kafka.bootstrap.servers`` and the other
``kafka.*`` client settings, consumer tuning) is accepted and ignored with
one logged line; any other unknown option is a :class:`ConfigError` naming
it, so a typo never silently reads everything."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..formats import kafka
from ..read_transforms import with_read_transforms
from ..rsm.aiven.config import RSM_CONFIG_PREFIX, AivenConfig, read_properties, rsm_properties
from ..rsm.remote_log import parse_topic_id
from ..rsm.settings import RsmSettings, parse_settings
from ..rsm.types import TopicPartition
from .kafka_remote_aiven import aiven_config
from .read_options import DEFAULT_BYTES_PER_PARTITION, positive_option
from .store_urls import pinned_url

__all__ = ["EARLIEST", "LATEST", "KafkaReadOptions", "OffsetBound", "TopicSelection", "parse_options"]

_LOG = logging.getLogger(__name__)
EARLIEST, LATEST = -2, -1

_OURS = {"url", "path", "prefix", "topic", "topicid", "partitions", "bytesperpartition", "maxdecompressedbytes",
         "layout", "config"}  # fmt: skip
_SPARKS = {
    "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets", "startingtimestamp",
    "endingtimestamp", "startingoffsetsbytimestamp", "endingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy", "failondataloss", "minpartitions", "maxrecordsperpartition",
    "includeheaders", "kafka.isolation.level", "maxoffsetspertrigger",
}  # fmt: skip
# Spark Kafka options that tune a live consumer or trigger pacing: nothing to do for a tiered copy.
_MEANINGLESS = {"groupidprefix", "kafkaconsumer.polltimeoutms", "fetchoffset.numretries",
                "fetchoffset.retryintervalms", "minoffsetspertrigger", "maxtriggerdelay"}  # fmt: skip


@dataclass(frozen=True)
class TopicSelection:
    """Which topic-partitions are read: Spark's ``subscribe`` (names),
    ``subscribePattern`` (a regular expression the whole name matches) or
    ``assign`` (partitions per topic), narrowed by our ``partitions``."""

    names: frozenset[str] = frozenset()
    pattern: str | None = None
    assigned: Mapping[str, frozenset[int]] | None = None
    partitions: frozenset[int] | None = None

    def wants(self, topic: str, partition: int) -> bool:
        if self.partitions is not None and partition not in self.partitions:
            return False
        if self.assigned is not None:
            return partition in self.assigned.get(topic, frozenset())
        if self.pattern is not None:
            return re.fullmatch(self.pattern, topic) is not None
        return topic in self.names


@dataclass(frozen=True)
class OffsetBound:
    """A starting or ending position as Spark's options give it: ``earliest``
    / ``latest`` for every partition, Kafka offsets per topic and partition
    (-2 earliest, -1 latest), or timestamps in milliseconds (one for every
    partition, or per topic and partition), each standing for the first
    offset whose record's timestamp is at or after it."""

    kind: str  # "earliest", "latest", "offsets" or "timestamps"
    per_partition: Mapping[str, Mapping[int, int]] | None = None
    timestamp: int | None = None  # for every partition, when per_partition is None

    def given(self, topic: str, partition: int) -> int | None:
        """The offset or timestamp named for a partition (``None``: not named)."""
        if self.per_partition is None:
            return self.timestamp
        return self.per_partition.get(topic, {}).get(partition)


@dataclass(frozen=True)
class KafkaReadOptions:
    """A ``kafka-remote`` read's options, checked (see :func:`parse_options`)."""

    url: str
    prefix: str
    selection: TopicSelection
    topic_ids: frozenset[str] | None
    starting: OffsetBound
    ending: OffsetBound
    read_committed: bool
    bytes_per_partition: int
    driver_options: tuple[tuple[str, str], ...]
    max_decompressed_bytes: int = kafka.DEFAULT_DECOMPRESSED_LIMIT
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    starting_timestamp_fallback_latest: bool = False  # startingOffsetsByTimestampStrategy=latest
    max_offsets_per_trigger: int | None = None
    aiven: AivenConfig | None = None  # layout=aiven: the plugin's configuration


def parse_options(options: Mapping[str, str], *, streaming: bool = False) -> KafkaReadOptions:
    """The source's options, checked; :class:`ConfigError` naming a bad or
    unknown one. ``streaming`` makes ``startingOffsets=latest`` (the log's
    end when the query starts) allowed and the default, and refuses ending
    positions, as Spark's Kafka source does."""
    lowered = {str(name).lower(): str(value) for name, value in options.items()}
    _check_names(lowered, streaming)
    layout = lowered.get("layout", "ours")
    if layout not in ("ours", "aiven"):
        raise ConfigError(f"layout={layout!r}: use ours (offload kafka copy's objects) or aiven (Aiven's plugin's)")
    given_url = lowered.get("url") or lowered.get("path")
    config = aiven_config(options) if layout == "aiven" else None
    settings = _our_settings(options, given_url) if layout == "ours" else None
    url = given_url or (config.url if config is not None else settings.url if settings is not None else None)
    if not url:
        raise ConfigError('kafka-remote needs the store: .option("url", "s3://bucket/prefix"), .load(URL) or '
                          '.option("config", "server.properties")')  # fmt: skip
    url = pinned_url(str(url))  # a relative file:// root means the same directory on every executor
    if layout == "aiven" and config is None:
        config = AivenConfig(str(url))  # a URL alone: an unencrypted store, no key pairs
    topic_ids = None
    if lowered.get("topicid"):
        topic_ids = frozenset(parse_topic_id(t.strip()) for t in lowered["topicid"].split(",") if t.strip())
    isolation = lowered.get("kafka.isolation.level", "read_uncommitted")
    if isolation not in ("read_uncommitted", "read_committed"):
        raise ConfigError(f"kafka.isolation.level={isolation!r}: use read_uncommitted or read_committed")
    strategy = lowered.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise ConfigError(f"startingOffsetsByTimestampStrategy={strategy!r}: use error or latest")
    ending_given = [n for n in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp") if n.lower() in lowered]
    if streaming and ending_given:
        raise ConfigError(f"kafka-remote: {ending_given[0]} is for batch reads only (as in Spark's Kafka source)")
    given = {str(k)[len("driver.") :]: str(v) for k, v in options.items() if str(k).lower().startswith("driver.")}
    configured = config.driver_options if config is not None else settings.driver_options if settings else {}
    from_config = configured if not lowered.get("url") else {}
    driver = tuple(sorted((k, str(v)) for k, v in with_read_transforms({**from_config, **given}).items()))
    config_prefix = config.key_prefix if config is not None else settings.prefix if settings is not None else ""
    return KafkaReadOptions(
        url=url,
        prefix=lowered.get("prefix", config_prefix),
        selection=_selection(lowered),
        topic_ids=topic_ids,
        starting=_bound(lowered, "starting", streaming),
        ending=_bound(lowered, "ending", streaming),
        read_committed=isolation == "read_committed",
        bytes_per_partition=_positive(lowered, "bytesPerPartition", DEFAULT_BYTES_PER_PARTITION),
        driver_options=driver,
        max_decompressed_bytes=_positive(lowered, "maxDecompressedBytes", kafka.DEFAULT_DECOMPRESSED_LIMIT),
        fail_on_data_loss=_boolean(lowered, "failOnDataLoss", True),
        min_partitions=_optional_positive(lowered, "minPartitions"),
        max_records_per_partition=_optional_positive(lowered, "maxRecordsPerPartition"),
        include_headers=_boolean(lowered, "includeHeaders", False),
        starting_timestamp_fallback_latest=strategy == "latest",
        max_offsets_per_trigger=_optional_positive(lowered, "maxOffsetsPerTrigger") if streaming else None,
        aiven=config,
    )


def _our_settings(options: Mapping[str, str], url: str | None) -> RsmSettings | None:
    """Our RemoteStorageManager's settings the options give, as ``offload
    kafka --config`` reads them: the ``rsm.config.*`` keys of ``config`` (a
    broker properties file), each ``rsm.config.*`` option replacing the
    file's; ``storage.url`` defaults to ``url``. None when they give none.
    Raises :class:`ConfigError` as :func:`~offload_core.rsm.settings.parse_settings`
    does, or for a file that does not read."""
    overrides = {RSM_CONFIG_PREFIX + str(k)[len(RSM_CONFIG_PREFIX) :]: str(v) for k, v in options.items()
                 if str(k).lower().startswith(RSM_CONFIG_PREFIX)}  # fmt: skip
    path = next((str(v) for k, v in options.items() if str(k).lower() == "config" and v), None)
    if path is None and not overrides:
        return None
    properties = read_properties(Path(path)) if path is not None else {}
    rsm = rsm_properties({**properties, **overrides})
    if url:
        rsm.setdefault("storage.url", url)
    try:
        return parse_settings(rsm)
    except ConfigError as error:
        raise ConfigError(f"kafka-remote (layout ours) {path or 'rsm.config.* options'}: {error}") from None


def _check_names(lowered: Mapping[str, str], streaming: bool) -> None:
    meaningless = _MEANINGLESS if streaming else _MEANINGLESS | {"maxoffsetspertrigger"}  # as Spark's batch reads
    ignored = sorted(n for n in lowered if n in meaningless or (n.startswith("kafka.") and n not in _SPARKS))
    known = _OURS | _SPARKS | set(ignored)
    unknown = sorted(n for n in lowered if n not in known and not n.startswith(("driver.", RSM_CONFIG_PREFIX)))
    if unknown:
        raise ConfigError(f"kafka-remote has no option {', '.join(unknown)}: it takes url, prefix, topic, topicId, "
                          "partitions, bytesPerPartition, maxDecompressedBytes, driver.<name>, layout, config, "
                          "rsm.config.* and Spark's Kafka "
                          "source options (subscribe, subscribePattern, assign, startingOffsets, endingOffsets, "
                          "...); see docs/data-engineers.md")  # fmt: skip
    if ignored:
        _LOG.warning("kafka-remote ignores %s: no meaning for a tiered copy read from the store", ", ".join(ignored))


def _selection(lowered: Mapping[str, str]) -> TopicSelection:
    chosen = [n for n in ("topic", "subscribe", "subscribepattern", "assign") if lowered.get(n, "").strip()]
    if len(chosen) != 1:
        found = f" (given: {', '.join(chosen)})" if chosen else ""
        raise ConfigError('kafka-remote needs .option("topic", NAME) or "subscribe" (comma-separated topics), '
                          '"subscribePattern" (a regular expression) or "assign" (JSON): exactly one'
                          + found)  # fmt: skip
    partitions = None
    if lowered.get("partitions"):
        try:
            partitions = frozenset(int(p) for p in lowered["partitions"].split(","))
        except ValueError:
            raise ConfigError(f"partitions={lowered['partitions']!r} is not comma-separated numbers") from None
    (name,) = chosen
    text = lowered[name].strip()
    if name == "subscribepattern":
        try:
            re.compile(text)
        except re.error as exc:
            raise ConfigError(f"subscribePattern={text!r} is not a regular expression: {exc}") from None
        return TopicSelection(pattern=text, partitions=partitions)
    if name == "assign":
        try:
            parsed = json.loads(text)
            assigned = {str(t): frozenset(int(p) for p in parts) for t, parts in parsed.items()}
        except (ValueError, AttributeError, TypeError):
            raise ConfigError(f'assign={text!r} is not JSON like {{"orders": [0, 1]}}') from None
        for topic in assigned:
            TopicPartition(topic, 0)
        return TopicSelection(assigned=assigned, partitions=partitions)
    names = frozenset(t.strip() for t in text.split(",") if t.strip())
    for topic in names:
        TopicPartition(topic, 0)  # a ConfigError naming an illegal topic name
    return TopicSelection(names=names, partitions=partitions)


def _bound(lowered: Mapping[str, str], side: str, streaming: bool) -> OffsetBound:
    """Spark's precedence: a timestamp for every partition, then timestamps
    per partition, then offsets."""
    if f"{side}timestamp" in lowered:
        raw = lowered[f"{side}timestamp"]
        try:
            return OffsetBound("timestamps", timestamp=int(raw))
        except ValueError:
            raise ConfigError(f"{side}Timestamp={raw!r} is not milliseconds since the epoch") from None
    if f"{side}offsetsbytimestamp" in lowered:
        return OffsetBound("timestamps", _per_partition(lowered[f"{side}offsetsbytimestamp"],
                                                        f"{side}OffsetsByTimestamp", 1_700_000_000_000))  # fmt: skip
    name = f"{side}Offsets"
    # Spark's defaults: a batch read starts at earliest, a streaming one at latest.
    text = lowered.get(name.lower(), "earliest" if side == "starting" and not streaming else "latest").strip()
    if text in ("earliest", "latest"):
        if not streaming and (side, text) == ("starting", "latest"):
            raise ConfigError("startingOffsets=latest reads nothing in a batch read: use earliest or JSON offsets")
        if (side, text) == ("ending", "earliest"):
            raise ConfigError("endingOffsets=earliest reads nothing: use latest or JSON offsets")
        return OffsetBound(text)
    offsets = _per_partition(text, name, 42)
    allowed = {EARLIEST, LATEST} if streaming else {EARLIEST} if side == "starting" else {LATEST}
    for topic, parts in offsets.items():
        for partition, offset in parts.items():
            if offset < 0 and offset not in allowed:
                words = " or ".join({EARLIEST: "-2 (earliest)", LATEST: "-1 (latest)"}[a] for a in sorted(allowed))
                raise ConfigError(f"{name} for {topic}-{partition} is {offset}: use an offset or {words}")
    return OffsetBound("offsets", offsets)


def _per_partition(text: str, name: str, example: int) -> dict[str, dict[int, int]]:
    try:
        parsed: Any = json.loads(text)
        return {str(topic): {int(p): int(o) for p, o in parts.items()} for topic, parts in parsed.items()}
    except (ValueError, AttributeError, TypeError):
        forms = "earliest, latest or " if name.endswith("Offsets") else ""
        raise ConfigError(f'{name}={text!r} is not {forms}JSON like {{"orders": {{"0": {example}}}}}') from None


def _boolean(lowered: Mapping[str, str], name: str, default: bool) -> bool:
    raw = lowered.get(name.lower(), str(default)).lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"kafka-remote: {name} is true or false, not {raw!r}")
    return raw == "true"


def _positive(lowered: Mapping[str, str], name: str, default: int) -> int:
    given = {name: lowered[name.lower()]} if name.lower() in lowered else {}
    return positive_option(given, name, default, source="kafka-remote")


def _optional_positive(lowered: Mapping[str, str], name: str) -> int | None:
    return _positive(lowered, name, 1) if name.lower() in lowered else None
