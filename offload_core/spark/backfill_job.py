"""The ``backfill`` job: offload many sealed ledgers in parallel on Spark.

The Spark driver opens the managed ledgers and *prepares* every offload
(uids recorded, ``complete=false``); each task writes one ledger's objects
from its hot-tier file; back on the driver, each ledger whose objects are
all written is *completed* with compare-and-set, and each that failed is
abandoned (its objects deleted). A crash of the driver mid-way leaves
prepared offloads that are cleaned up when the topic is next opened.

The topics must not be open in another process (their lock file says so),
and executors must reach the data directory's hot-tier files (local mode,
or a shared filesystem) and the object store.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import NotFoundError, OffloadError
from ..managed_ledger import Broker, BrokerConfig, OffloadStatus, OffloadTicket, TopicName, write_offload
from .progress import Progress, run_with_progress

__all__ = ["BackfillResult", "LedgerOutcome", "backfill"]


@dataclass(frozen=True)
class LedgerOutcome:
    """One ledger of the backfill: offloaded (bytes written), or the error."""

    topic: str
    ledger_id: int
    uuid: str
    data_bytes: int
    error: str | None = None


@dataclass(frozen=True)
class BackfillResult:
    ledgers: list[LedgerOutcome]
    statuses: dict[str, OffloadStatus]

    @property
    def offloaded(self) -> list[LedgerOutcome]:
        return [outcome for outcome in self.ledgers if outcome.error is None]

    @property
    def failed(self) -> list[LedgerOutcome]:
        return [outcome for outcome in self.ledgers if outcome.error is not None]


def backfill(
    spark: Any,
    data_dir: str | Path,
    *,
    config: BrokerConfig | None = None,
    topics: Iterable[str] | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> BackfillResult:
    """Offload every sealed, not yet offloaded ledger of ``topics`` (all
    topics in ``data_dir`` when ``None``), one Spark task per ledger.

    A ledger that fails is reported in the result and left as it was (not
    offloaded, no objects); it does not stop the others.

    Raises :class:`NotFoundError` for a topic that does not exist (nothing
    is created or offloaded), :class:`OffloadError` if a topic is open in
    another process, and whatever Spark raises if the job itself fails
    (every prepared offload is abandoned first)."""
    with Broker(data_dir, config) as broker:
        existing = broker.topics()
        names = [TopicName.parse(name) for name in topics] if topics is not None else existing
        unknown = [str(name) for name in names if name not in existing]
        if unknown:
            raise NotFoundError(
                f"no topic {', '.join(unknown)} in {broker.data_dir}; list them with `offload topics list`"
            )
        ledgers = {str(name): broker.topic(name) for name in names}
        tickets: list[tuple[str, OffloadTicket]] = []
        try:
            for topic, ledger in ledgers.items():
                tickets += [(topic, ledger.prepare_offload(ledger_id)) for ledger_id in ledger.offloadable_ledgers()]

            def write_all() -> list[tuple[int, str | None]]:
                if not tickets:
                    return []
                rdd = spark.sparkContext.parallelize([ticket for _, ticket in tickets], len(tickets))
                return rdd.map(_write).collect()  # type: ignore[no-any-return]

            written = run_with_progress(spark, f"backfill: offloading {len(tickets)} ledger(s)", write_all, progress)
        except BaseException:
            for topic, ticket in tickets:
                ledgers[topic].abandon_offload(ticket)
            raise
        outcomes: list[LedgerOutcome] = []
        for (topic, ticket), (data_bytes, error) in zip(tickets, written, strict=True):
            ledger = ledgers[topic]
            if error is None:
                try:
                    ledger.complete_offload(ticket)
                except OffloadError as exc:
                    error = f"completing: {type(exc).__name__}: {exc}"
            if error is not None:
                ledger.abandon_offload(ticket)
            outcomes.append(LedgerOutcome(topic, ticket.ledger_id, ticket.uuid, data_bytes, error))
        statuses = {
            topic: ledger.record_offload_run(
                sum(1 for o in outcomes if o.topic == topic and o.error is None),
                {o.ledger_id: o.error for o in outcomes if o.topic == topic and o.error is not None},
            )
            for topic, ledger in ledgers.items()
        }
    return BackfillResult(outcomes, statuses)


def _write(ticket: OffloadTicket) -> tuple[int, str | None]:
    """Runs in a task: one ledger's objects. Errors come back as text so one
    bad ledger does not fail the others."""
    try:
        result = write_offload(ticket)
    except Exception as exc:
        return 0, f"{type(exc).__name__}: {exc}"
    return result.data_object_length, None
