"""Where a Kafka export starts: the table's watermarks that still hold for
the topic incarnations the store has now.

A Kafka topic deleted and recreated keeps its name, gets a new topic id and
starts again at offset 0; the store keys its segments by topic id. A
watermark recorded for one topic id says nothing about another: a
partition whose id in the store is not the one its watermark was recorded
for is read from its start, and the old id is recorded as replaced (the
table holds rows of both). Watermarks from before topic ids were kept
count for whatever the store holds."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from ..kafka_options import parse_options
from ..kafka_positions import selected_partitions
from ..planning_reads import open_planning_driver
from .watermarks import REPLACED_TOPIC_IDS, TOPIC_IDS, TopicIds, Watermarks, topic_ids_json

__all__ = ["KafkaStart", "kafka_start", "store_topic_ids"]


@dataclass(frozen=True)
class KafkaStart:
    """A Kafka export's starting point: the watermarks it builds on, the
    topic id of each partition it records, and the earlier incarnations
    (by topic) the table holds rows of."""

    marks: Watermarks
    topic_ids: TopicIds
    replaced: dict[str, list[str]]

    def starting_offsets(self, topic: str) -> str | None:
        """``startingOffsets`` JSON for ``topic`` (``None``: every partition from its start)."""
        starting = {str(partition): position[0] + 1 for (name, partition), position in self.marks.items()
                    if name == topic}  # fmt: skip
        return json.dumps({topic: starting}) if starting else None

    def summary(self) -> dict[str, str]:
        """The snapshot summary properties that record the incarnations."""
        found = {TOPIC_IDS: topic_ids_json(self.topic_ids)}
        return found | ({REPLACED_TOPIC_IDS: json.dumps(self.replaced, sort_keys=True)} if self.replaced else {})


def kafka_start(marks: Watermarks, recorded: TopicIds, replaced: Mapping[str, list[str]],
                current: TopicIds) -> KafkaStart:  # fmt: skip
    """The start of an export whose table holds ``marks`` recorded for topic
    ids ``recorded`` (and rows of the ``replaced`` ones) from a store whose
    partitions have topic ids ``current``."""
    kept: Watermarks = {}
    earlier = {topic: list(ids) for topic, ids in replaced.items()}
    for key, position in marks.items():
        then, now = recorded.get(key), current.get(key)
        if then is None or now is None or then == now:
            kept[key] = position
        elif then not in earlier.setdefault(key[0], []):
            earlier[key[0]].append(then)
    ids = {key: topic_id for key, topic_id in recorded.items() if key in kept} | dict(current)
    return KafkaStart(kept, ids, earlier)


def store_topic_ids(url: str | None, topic: str, options: Mapping[str, str]) -> TopicIds:
    """The topic id of each partition of ``topic`` the store holds, read as
    ``kafka-remote`` reads it with ``options``. Raises :class:`ConfigError`
    for bad options and for a partition with several topic ids and no
    ``topicId`` to pick one."""
    given = {**options, "topic": topic} | ({"url": url} if url is not None else {})
    parsed = parse_options(given)
    with open_planning_driver(parsed.url, parsed.driver_options) as driver:
        return {(topic, tp.partition): tp.topic_id for tp in selected_partitions(parsed, driver)}
