"""How far an export got, kept in the Iceberg table's properties and
snapshot summaries. Pure.

Every snapshot an export commits carries, in its summary, ``offload.run-id``
and ``offload.watermarks``: JSON ``{topic: {partition: position}}`` with
the last record exported of every topic partition so far (cumulative, so
the newest such snapshot says it all). A position is ``[ledger id, entry
id]`` for Pulsar and ``[offset]`` for Kafka. Snapshots other writers commit
(compaction, say) carry none: the newest one that does counts. The same
commit sets the table properties :data:`TABLE_RECORD` names to the
summary's values: they outlive the snapshot once it is expired, so they
are read first, and the summaries only for a table exported before they
were kept.

A Kafka export's snapshots also carry ``offload.topic-ids``, JSON
``{topic: {partition: topic id}}``: the incarnation of the topic each
watermark is a position in (a topic deleted and recreated has a new id and
offsets from 0 again), and once the table holds rows of an earlier one,
``offload.replaced-topic-ids``, ``{topic: [topic id, ...]}``. Snapshots
from before topic ids were kept have neither: their watermarks count for
whatever incarnation the store holds."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from ...errors import FormatError

__all__ = [
    "REPLACED_TOPIC_IDS",
    "RUN_ID",
    "TABLE_RECORD",
    "TOPIC_IDS",
    "WATERMARKS",
    "Position",
    "TopicIds",
    "Watermarks",
    "committed_run_ids",
    "merged",
    "replaced_topic_ids_of",
    "summary",
    "table_record",
    "topic_ids_json",
    "topic_ids_of",
    "watermarks_of",
]

RUN_ID = "offload.run-id"
WATERMARKS = "offload.watermarks"
TOPIC_IDS = "offload.topic-ids"
REPLACED_TOPIC_IDS = "offload.replaced-topic-ids"
#: The summary properties an export also keeps as table properties.
TABLE_RECORD = (WATERMARKS, TOPIC_IDS, REPLACED_TOPIC_IDS)

Position = tuple[int, ...]
Watermarks = dict[tuple[str, int], Position]
#: The topic id (incarnation) of each topic partition.
TopicIds = dict[tuple[str, int], str]


def summary(run_id: str, source: str, marks: Watermarks, rows: int) -> dict[str, str]:
    """The snapshot properties of one export run."""
    nested: dict[str, dict[str, list[int]]] = {}
    for (topic, partition), position in sorted(marks.items()):
        nested.setdefault(topic, {})[str(partition)] = list(position)
    return {RUN_ID: run_id, "offload.source": source, "offload.rows": str(rows), WATERMARKS: json.dumps(nested)}


def table_record(properties: Mapping[str, str]) -> dict[str, str]:
    """The table properties that keep a run's snapshot ``properties``."""
    return {key: properties[key] for key in TABLE_RECORD if key in properties}


def watermarks_of(summaries: Iterable[Mapping[str, str]]) -> Watermarks:
    """The watermarks in the first of ``summaries`` (newest first) that has
    them; none when none has. Raises :class:`FormatError` for a damaged one."""
    for properties in summaries:
        text = properties.get(WATERMARKS)
        if text is None:
            continue
        try:
            nested = json.loads(text)
            return {
                (str(topic), int(partition)): tuple(int(value) for value in position)
                for topic, partitions in nested.items()
                for partition, position in partitions.items()
            }
        except (ValueError, TypeError, AttributeError):
            raise FormatError(
                f"snapshot summary {WATERMARKS}={text[:200]!r} is not what an export writes; the table's export "
                "history is damaged: export to a new --table"
            ) from None
    return {}


def merged(old: Watermarks, new: Watermarks) -> Watermarks:
    """``old`` with every partition ``new`` names moved on to the later position."""
    result = dict(old)
    for key, position in new.items():
        result[key] = max(position, result.get(key, position))
    return result


def committed_run_ids(summaries: Iterable[Mapping[str, str]]) -> set[str]:
    """The export runs the table's snapshots record."""
    return {properties[RUN_ID] for properties in summaries if RUN_ID in properties}


def topic_ids_json(ids: TopicIds) -> str:
    """``ids`` as ``offload.topic-ids`` holds them."""
    nested: dict[str, dict[str, str]] = {}
    for (topic, partition), topic_id in sorted(ids.items()):
        nested.setdefault(topic, {})[str(partition)] = topic_id
    return json.dumps(nested)


def _newest_with_watermarks(summaries: Iterable[Mapping[str, str]]) -> Mapping[str, str]:
    return next((properties for properties in summaries if WATERMARKS in properties), {})


def topic_ids_of(summaries: Iterable[Mapping[str, str]]) -> TopicIds:
    """The topic ids recorded beside the newest watermarks (none in a table
    exported before they were kept). Raises :class:`FormatError` for a
    damaged record."""
    text = _newest_with_watermarks(summaries).get(TOPIC_IDS)
    if text is None:
        return {}
    try:
        nested = json.loads(text)
        return {(str(topic), int(partition)): str(topic_id)
                for topic, partitions in nested.items() for partition, topic_id in partitions.items()}  # fmt: skip
    except (ValueError, TypeError, AttributeError):
        raise _damaged(TOPIC_IDS, text) from None


def replaced_topic_ids_of(summaries: Iterable[Mapping[str, str]]) -> dict[str, list[str]]:
    """The earlier incarnations, by topic, the table holds rows of.
    Raises :class:`FormatError` for a damaged record."""
    text = _newest_with_watermarks(summaries).get(REPLACED_TOPIC_IDS)
    if text is None:
        return {}
    try:
        return {str(topic): [str(topic_id) for topic_id in ids] for topic, ids in json.loads(text).items()}
    except (ValueError, TypeError, AttributeError):
        raise _damaged(REPLACED_TOPIC_IDS, text) from None


def _damaged(key: str, text: str) -> FormatError:
    return FormatError(f"snapshot summary {key}={text[:200]!r} is not what an export writes; the table's export "
                       "history is damaged: export to a new --table")  # fmt: skip
