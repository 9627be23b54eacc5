"""The ``backfill`` job: offload many sealed ledgers in parallel on Spark.

The Spark driver opens the managed ledgers and *prepares* every offload
(uids recorded, ``complete=false``); each task writes one ledger's objects
from its hot-tier file; back on the driver, each ledger whose objects are
all written is *completed* with compare-and-set, and each that failed is
abandoned (its objects deleted). A crash of the driver mid-way leaves
prepared offloads that are cleaned up when the topic is next opened.

A topic with streaming offload (PIP-76) on is backfilled in segments
instead: its sealed entries not yet in a segment are cut into segments of
the configured size by binary search over entry positions (no scan), each
segment is assigned in the metadata, written by one task, then completed or
abandoned the same way.

The topics must not be open in another process (their lock file says so),
and executors must reach the data directory's hot-tier files (local mode,
or a shared filesystem) and the object store. Credentials for a cloud store
are the job's ``driver_options``, shipped to every task with it: neither
the tickets nor the ledgers' metadata hold them, and an executor never
falls back on the Spark driver's environment or files (it has neither).
"""

from __future__ import annotations

import functools
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import AccessDeniedError, ConfigError, NotFoundError, OffloadError
from ..managed_ledger import (
    Broker,
    BrokerConfig,
    OffloadStatus,
    OffloadTicket,
    SegmentTicket,
    TopicName,
    write_offload,
    write_segment,
)
from ..managed_ledger.lifecycle.offloaders import describe_store
from .progress import Progress, run_with_progress
from .session import classic_context
from .store_tasks import TaskFailure, collect_guarded

__all__ = ["BackfillResult", "LedgerOutcome", "SegmentOutcome", "backfill"]


@dataclass(frozen=True)
class LedgerOutcome:
    """One ledger of the backfill: offloaded (bytes written), or the error."""

    topic: str
    ledger_id: int
    uuid: str
    data_bytes: int
    error: str | None = None


@dataclass(frozen=True)
class SegmentOutcome:
    """One segment of a streaming topic's backfill: the entries it holds
    (``(ledger, first, last)``), the bytes written, or the error."""

    topic: str
    uuid: str
    runs: tuple[tuple[int, int, int], ...]
    data_bytes: int
    error: str | None = None


@dataclass(frozen=True)
class BackfillResult:
    ledgers: list[LedgerOutcome]
    statuses: dict[str, OffloadStatus]
    segments: list[SegmentOutcome] = field(default_factory=list)

    @property
    def failed_segments(self) -> list[SegmentOutcome]:
        return [outcome for outcome in self.segments if outcome.error is not None]

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
    driver_options: Mapping[str, Any] | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> BackfillResult:
    """Offload every sealed, not yet offloaded ledger of ``topics`` (all
    topics in ``data_dir`` when ``None``), one Spark task per ledger, or
    per segment for a topic with streaming offload on.

    ``driver_options`` go to the store's driver on the Spark driver and in
    every task (credentials: ``access_key_id``, ``secret_access_key`` ...);
    where the offloads go (bucket, endpoint, region) is the config's, as it
    is recorded with each ledger.

    A ledger that fails is reported in the result and left as it was (not
    offloaded, no objects); it does not stop the others. A task that cannot
    use the store at all (credentials refused or missing, its driver not
    installed) fails the job with one error instead.

    Raises :class:`NotFoundError` for a topic that does not exist (nothing
    is created or offloaded), :class:`OffloadError` if a topic is open in
    another process, :class:`ConfigError` for driver options naming a
    recorded setting, a task's :class:`AccessDeniedError` /
    :class:`ConfigError` as :meth:`TaskFailure.for_driver` (naming the
    store and what to fix), and whatever Spark raises if the job itself
    fails (every prepared offload is abandoned first), and
    :class:`ConfigError` for a Spark Connect session (before anything is
    prepared)."""
    context = classic_context(spark, "backfill")
    with Broker(data_dir, config, driver_options=driver_options) as broker:
        existing = broker.topics()
        names = [TopicName.parse(name) for name in topics] if topics is not None else existing
        unknown = [str(name) for name in names if name not in existing]
        if unknown:
            raise NotFoundError(
                f"no topic {', '.join(unknown)} in {broker.data_dir}; list them with `offload topics list`"
            )
        ledgers = {str(name): broker.topic(name) for name in names}
        tickets: list[tuple[str, OffloadTicket | SegmentTicket]] = []
        try:
            for topic, ledger in ledgers.items():
                if ledger.policies().streaming_enabled:
                    tickets += [(topic, ticket) for ticket in ledger.prepare_segment_tickets()]
                else:
                    tickets += [(topic, ledger.prepare_offload(lid)) for lid in ledger.offloadable_ledgers()]

            def write_all() -> list[tuple[int, str | None, dict[int, int]]]:
                if not tickets:
                    return []
                rdd = context.parallelize([ticket for _, ticket in tickets], len(tickets))
                return collect_guarded(rdd, functools.partial(_write_each, dict(driver_options or {})))

            streamed = sum(1 for _, ticket in tickets if isinstance(ticket, SegmentTicket))
            what = f"offloading {len(tickets) - streamed} ledger(s)" + (f", {streamed} segment(s)" if streamed else "")
            written = run_with_progress(spark, f"backfill: {what}", write_all, progress)
        except BaseException:
            for topic, ticket in tickets:
                _abandon(ledgers[topic], ticket)
            raise
        outcomes: list[LedgerOutcome] = []
        segments: list[SegmentOutcome] = []
        for (topic, ticket), (data_bytes, error, ends) in zip(tickets, written, strict=True):
            ledger = ledgers[topic]
            if error is None:
                try:
                    if isinstance(ticket, SegmentTicket):
                        ledger.complete_segment_ticket(ticket, ends)
                    else:
                        ledger.complete_offload(ticket)
                except OffloadError as exc:
                    error = f"completing: {type(exc).__name__}: {exc}"
            if error is not None:
                error = _abandon(ledger, ticket, error)
            if isinstance(ticket, SegmentTicket):
                runs = tuple((run.ledger_id, run.first_entry_id, run.last_entry_id) for run in ticket.runs)
                segments.append(SegmentOutcome(topic, ticket.uuid, runs, data_bytes, error))
            else:
                outcomes.append(LedgerOutcome(topic, ticket.ledger_id, ticket.uuid, data_bytes, error))
        statuses = {
            topic: ledger.record_offload_run(
                sum(1 for o in outcomes if o.topic == topic and o.error is None)
                + sum(1 for o in segments if o.topic == topic and o.error is None),
                {o.ledger_id: o.error for o in outcomes if o.topic == topic and o.error is not None}
                | {o.runs[0][0]: o.error for o in segments if o.topic == topic and o.error is not None},
            )
            for topic, ledger in ledgers.items()
        }
    return BackfillResult(outcomes, statuses, segments)


Written = tuple[int, str | None, dict[int, int]]


def _write_each(
    driver_options: dict[str, Any], tickets: Iterator[OffloadTicket | SegmentTicket]
) -> Iterator[Written | TaskFailure]:
    for ticket in tickets:
        written = _write(ticket, driver_options)
        yield written
        if isinstance(written, TaskFailure):
            return


def _write(ticket: OffloadTicket | SegmentTicket, driver_options: dict[str, Any]) -> Written | TaskFailure:
    """Runs in a task: one ledger's objects, or one segment's (with each
    ledger's last entry in it). Errors come back as text so one bad ledger
    or segment does not fail the others; a store the task cannot use at
    all comes back as a :class:`TaskFailure`, which ends the job once."""
    try:
        if isinstance(ticket, SegmentTicket):
            segment = write_segment(ticket, driver_options=driver_options)
            return segment.data_object_length, None, {r.ledger_id: r.last_entry_id for r in segment.ledgers}
        result = write_offload(ticket, driver_options=driver_options)
    except (AccessDeniedError, ConfigError) as exc:
        return TaskFailure(socket.gethostname(), describe_store(dict(ticket.settings), Path(ticket.data_dir)), exc)
    except Exception as exc:
        return 0, f"{type(exc).__name__}: {exc}", {}
    return result.data_object_length, None, {}


def _abandon(ledger: Any, ticket: OffloadTicket | SegmentTicket, error: str | None = None) -> str | None:
    """Undo a ticket that was not completed; a failure to undo is added to
    ``error`` (the assignment or uid then stays for the next open to clean)."""
    try:
        if isinstance(ticket, SegmentTicket):
            ledger.abandon_segment_ticket(ticket)
        else:
            ledger.abandon_offload(ticket)
    except OffloadError as exc:
        return f"{error}; cleaning up failed too: {exc}" if error else f"cleaning up failed: {exc}"
    return error
