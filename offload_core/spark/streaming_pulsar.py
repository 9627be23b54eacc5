"""``spark.readStream.format("pulsar-offload")``: each micro-batch reads the
entries offloaded since the last: ledgers offloaded whole, and entries
streamed in PIP-76 segments (see :mod:`offload_core.spark.ledger_extents`).

An offset in Spark's checkpoint is the store (its URL without secrets)
and, per ledger, the next entry id to read: ``{"store": "s3://bucket/p",
"ledgers": {"12": 4000}}``. A micro-batch reads entries ``[start, end)``
of each ledger, with the ``pulsar-offload`` batch reader's planning and
rows, so a query restarted from its checkpoint reads every entry once.
Each ``latestOffset`` reads the indexes of the objects offloaded since
the last (see :class:`offload_core.spark.ledger_extents.IndexedBlocks`).
``maxBytesPerTrigger`` caps the blocks a micro-batch takes (in ledger
order, one block at least); ``trigger(availableNow=True)`` reads what is
in the store when the query starts and stops. The ``ledgers`` and
``entries`` options narrow what is followed, as in a batch read, and
``failOnDataLoss`` applies to a micro-batch's reads as to a batch read's.
A trigger's planning skips (``failOnDataLoss=false``) are carried to the
micro-batch that follows, to be counted on the skip accumulator (see
:mod:`offload_core.spark.data_loss`); when the source has one, the offset
then also holds how many this query's triggers found (``"skipped": 1``),
so that micro-batch runs."""

from __future__ import annotations

import reprlib
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxBytes, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from ..errors import ConfigError
from ..redaction import redact_url
from .data_loss import PlanningSkipsPartition
from .ledger_extents import Block, IndexedBlocks, ledger_extents
from .pulsar_offload import PulsarOffloadReader, plan_partitions
from .read_options import EntrySelection, positive_option

__all__ = ["PulsarOffloadStreamReader", "make_stream_reader"]


class PulsarOffloadStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The ``pulsar-offload`` streaming reader. :class:`ConfigError` for bad
    options and for a checkpoint written by a query over another store."""

    def __init__(self, options: Mapping[str, str], schema: StructType, skips: Any = None) -> None:
        self.batch = PulsarOffloadReader(options, schema, skips)
        # What the planning of triggers left out, until a micro-batch's partitions carry it to a task.
        self.planning_skips: list[dict[str, Any]] = []
        self.counted = 0  # how many of them an offset given to Spark counts already
        self.options = replace(self.batch.options, planning_skips=self.planning_skips)
        self.max_bytes = positive_option(options, "maxBytesPerTrigger", 1) if "maxBytesPerTrigger" in options else None
        self.target: dict[int, int] | None = None
        # Spark keeps one reader for a query's run, so each trigger reads only the indexes new since the last.
        self.indexed = IndexedBlocks()

    def initialOffset(self) -> dict[str, Any]:
        return self._offset({}, 0)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable() if self.max_bytes is None else ReadMaxBytes(self.max_bytes)

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = {
            ledger_id: blocks[-1].end for ledger_id, blocks in ledger_extents(self.options, self.indexed).items()
        }

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = self._checked(start)
        budget = limit.max_bytes if isinstance(limit, ReadMaxBytes) else None
        ends = dict(begin)
        any_taken = False
        for ledger_id, blocks in ledger_extents(self.options, self.indexed).items():
            first = begin.get(ledger_id, blocks[0].first)
            cap = blocks[-1].end if self.target is None else self.target.get(ledger_id, first)
            taken, budget = _taken(blocks, first, cap, budget, any_taken=any_taken)
            if taken > first:
                ends[ledger_id] = taken
                any_taken = True
        if self.batch.store.skips is None:
            self.planning_skips.clear()  # logged; with no accumulator to count them on, no micro-batch carries them
        found, self.counted = len(self.planning_skips) - self.counted, len(self.planning_skips)
        return self._offset(ends, _skip_count(start) + found)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[Any]:
        begin, stop = self._checked(start), self._checked(end)
        ranges = []
        for ledger_id, last in sorted(stop.items()):
            for low, high in self.options.selection.entry_ranges(ledger_id):
                first = max(low, begin.get(ledger_id, 0))
                final = last - 1 if high is None else min(high, last - 1)
                if first <= final:
                    ranges.append((ledger_id, first, final))
        planned: list[Any] = []
        if ranges:
            batch = replace(self.options, selection=EntrySelection(ranges=tuple(ranges)))
            # A segment whose index latestOffset read holds none of these entries: its index is not read again.
            planned = list(plan_partitions(batch, segment_wanted=self.indexed.segment_wanted(ranges)))
        if self.planning_skips and self.batch.store.skips is not None:
            # First: a sink that takes a few rows (limit, take, show) runs the first tasks only, until it has them.
            planned.insert(0, PlanningSkipsPartition(tuple(self.planning_skips)))
        self.planning_skips.clear()
        self.counted = 0
        return planned

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if isinstance(partition, PlanningSkipsPartition):
            partition.record(self.batch.store.skips)
            return iter(())
        return self.batch.read(partition)

    def _store(self) -> str:
        return redact_url(self.options.url)

    def _offset(self, ledgers: Mapping[int, int], skipped: int) -> dict[str, Any]:
        by_ledger = {str(ledger_id): end for ledger_id, end in sorted(ledgers.items())}
        offset: dict[str, Any] = {"store": self._store(), "ledgers": by_ledger}
        if skipped:  # absent until a trigger's planning skips: checkpoints of earlier versions read the same
            offset["skipped"] = skipped
        return offset

    def _checked(self, offset: Mapping[str, Any]) -> dict[int, int]:
        """The per-ledger offsets of a checkpointed offset of this query's
        store; :class:`ConfigError` naming both stores if it is another's,
        or naming what is wrong with one this version cannot read."""
        theirs = offset.get("store")
        if theirs != self._store():
            raise ConfigError(
                f"this query's checkpoint holds offsets of pulsar-offload store {theirs}, but the query reads "
                f"{self._store()}: give the query a new checkpointLocation, or read the store the checkpoint "
                "belongs to"
            )
        skipped = offset.get("skipped", 0)
        wrong = None
        if not isinstance(offset.get("ledgers"), dict):
            wrong = "its 'ledgers' is not a map of ledger ids to entry ids"
        elif type(skipped) is not int or skipped < 0:  # a JSON true is a bool, which is an int
            wrong = f"its 'skipped' is {reprlib.repr(skipped)}, not a count"
        else:
            try:
                begin = {int(ledger_id): end for ledger_id, end in offset["ledgers"].items()}
            except (TypeError, ValueError):
                begin = None
            # An end as this version writes it, a JSON integer: a float or a bool would be misread as an entry id
            # (and 1e999 overflows int()).
            if begin is not None and all(type(end) is int and end >= 0 for end in begin.values()):
                return begin
            wrong = f"its 'ledgers' is {reprlib.repr(offset['ledgers'])}, not a map of ledger ids to entry ids"
        raise ConfigError(f"this query's checkpoint holds an offset of pulsar-offload store {theirs} that this "
                          f"version cannot read: {wrong}; give the query a new checkpointLocation")  # fmt: skip


def _skip_count(offset: Mapping[str, Any]) -> int:
    """How many objects the planning of this query's triggers left out, up to ``offset``."""
    return int(offset.get("skipped", 0))


def _taken(blocks: list[Block], first: int, cap: int, budget: int | None, *, any_taken: bool) -> tuple[int, int | None]:
    """How far this micro-batch reads a ledger from ``first`` (at most
    ``cap``), and the byte budget left: whole blocks while the budget
    lasts, one at least in the micro-batch."""
    end = first
    for block in blocks:
        if block.end <= first or block.first >= cap:
            continue
        if budget is not None:
            if block.size > budget and (any_taken or end > first):
                return end, 0
            budget = max(0, budget - block.size)
        end = min(block.end, cap)
    return end, budget


def make_stream_reader(options: Mapping[str, str], schema: StructType, skips: Any = None) -> PulsarOffloadStreamReader:
    """The reader of a ``readStream`` of ``pulsar-offload``, its tasks recording
    their skips on ``skips`` (see :mod:`~offload_core.spark.data_loss`) if given."""
    return PulsarOffloadStreamReader(options, schema, skips)
