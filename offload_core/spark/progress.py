"""Running a Spark action while reporting its tasks' progress."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Progress", "run_with_progress"]

T = TypeVar("T")


@dataclass(frozen=True)
class Progress:
    """Tasks finished so far of every stage the action started."""

    description: str
    done: int
    total: int


def run_with_progress(
    spark: Any,
    description: str,
    action: Callable[[], T],
    report: Callable[[Progress], None] | None = None,
    *,
    interval: float = 0.5,
) -> T:
    """Run ``action`` (which starts Spark jobs) under its own job group and,
    while it runs, call ``report`` whenever the count of finished tasks
    changes (and once at the end). Whatever ``action`` raises is re-raised
    here."""
    if report is None:
        return action()
    from pyspark import InheritableThread

    context = spark.sparkContext
    group = f"offload-core-{uuid.uuid4().hex}"
    outcome: dict[str, Any] = {}

    def run() -> None:
        # Job groups are per thread; this thread's jobs are the ones to watch.
        context.setJobGroup(group, description)
        try:
            outcome["value"] = action()
        except BaseException as exc:
            outcome["error"] = exc

    worker = InheritableThread(target=run, daemon=True)
    worker.start()
    last: tuple[int, int] | None = None
    finished = False
    while not finished:
        worker.join(interval)
        finished = not worker.is_alive()
        counts = _task_counts(context, group)
        if counts != last or finished:
            report(Progress(description, *counts))
            last = counts
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


def _task_counts(context: Any, group: str) -> tuple[int, int]:
    tracker = context.statusTracker()
    done = total = 0
    for job_id in tracker.getJobIdsForGroup(group):
        job = tracker.getJobInfo(job_id)
        if job is None:
            continue
        for stage_id in job.stageIds:
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
                total += stage.numTasks
    return done, total
