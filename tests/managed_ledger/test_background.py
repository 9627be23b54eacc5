"""The broker's background pool: jobs run off the caller's thread, drain
waits for them, and once the pool is closed a submission is dropped
instead of failing its caller (an upload thread asking for a pump while
the broker closes, say)."""

from __future__ import annotations

import logging
import threading

import pytest

from offload_core.hooks import Event
from offload_core.managed_ledger.background import BackgroundWork


def test_jobs_run_in_the_background_and_drain_waits_for_what_they_submit() -> None:
    events: list[Event] = []
    work = BackgroundWork(events.append)
    ran: list[str] = []
    release = threading.Event()

    def second() -> None:
        ran.append("second")

    def first() -> None:
        release.wait(5)
        ran.append("first")
        work.submit("second", second)

    work.submit("first", first)
    assert not work.drain(0.05)
    release.set()
    assert work.drain(5)
    assert ran == ["first", "second"]
    work.close()
    assert events == []


def test_a_failing_job_is_reported_not_raised() -> None:
    events: list[Event] = []
    work = BackgroundWork(events.append)

    def fail() -> None:
        raise ValueError("boom")

    work.submit("failing job", fail)
    work.close()
    assert [(e.kind, e.fields["what"]) for e in events] == [("maintenance.failed", "failing job")]


def test_a_job_submitted_after_close_is_dropped_quietly(caplog: pytest.LogCaptureFixture) -> None:
    work = BackgroundWork(lambda event: None)
    work.close()
    ran: list[int] = []
    with caplog.at_level(logging.WARNING):
        work.submit("late pump", lambda: ran.append(1))  # raised RuntimeError before
    assert ran == []
    assert work.drain(0)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_deferred_job_runs_when_due_or_at_once_on_drain() -> None:
    work = BackgroundWork(lambda event: None)
    ran: list[str] = []
    due = threading.Event()
    work.submit_after(0.01, "soon", lambda: (ran.append("soon"), due.set()))
    assert due.wait(10)  # on its own, with nobody draining
    work.submit_after(3600, "in an hour", lambda: ran.append("in an hour"))
    assert work.drain(10)  # started now, not in an hour
    assert ran == ["soon", "in an hour"]
    work.close()
    work.submit_after(0, "after close", lambda: ran.append("after close"))
    assert ran == ["soon", "in an hour"]
