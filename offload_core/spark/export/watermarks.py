"""How far an export got, kept in the Iceberg snapshot summary. Pure.

Every snapshot an export commits carries, in its summary, ``offload.run-id``
and ``offload.watermarks``: JSON ``{topic: {partition: position}}`` with
the last record exported of every topic partition so far (cumulative, so
the newest such snapshot says it all). A position is ``[ledger id, entry
id]`` for Pulsar and ``[offset]`` for Kafka. Snapshots other writers commit
(compaction, say) carry none: the newest one that does counts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from ...errors import FormatError

__all__ = ["RUN_ID", "WATERMARKS", "Position", "Watermarks", "committed_run_ids", "merged", "summary", "watermarks_of"]

RUN_ID = "offload.run-id"
WATERMARKS = "offload.watermarks"

Position = tuple[int, ...]
Watermarks = dict[tuple[str, int], Position]


def summary(run_id: str, source: str, marks: Watermarks, rows: int) -> dict[str, str]:
    """The snapshot properties of one export run."""
    nested: dict[str, dict[str, list[int]]] = {}
    for (topic, partition), position in sorted(marks.items()):
        nested.setdefault(topic, {})[str(partition)] = list(position)
    return {RUN_ID: run_id, "offload.source": source, "offload.rows": str(rows), WATERMARKS: json.dumps(nested)}


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
