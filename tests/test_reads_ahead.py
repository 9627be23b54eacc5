"""``map_ahead``: small reads a few at a time, their results in order, with
what is taken and held ahead of the caller bounded."""

from __future__ import annotations

import itertools
import threading

import pytest

from offload_core.reads_ahead import map_ahead


def test_results_come_in_the_items_order_whatever_order_the_calls_end_in() -> None:
    started = [threading.Event() for _ in range(6)]

    def call(n: int) -> int:
        started[n].set()
        if n < 5:
            assert started[n + 1].wait(timeout=30)  # each call ends after the next one started
        return n * 10

    assert list(map_ahead(call, range(6), threads=6)) == [0, 10, 20, 30, 40, 50]


def test_calls_run_at_once_up_to_the_thread_count() -> None:
    together = threading.Barrier(4, timeout=30)  # broken, and the test failed, unless 4 calls run at once

    def call(n: int) -> int:
        together.wait()
        return n

    assert list(map_ahead(call, range(8), threads=4)) == list(range(8))


def test_items_are_taken_only_a_bounded_way_ahead_of_the_caller() -> None:
    taken = itertools.count()
    items = (next(taken) for _ in itertools.repeat(None))  # endless
    results = map_ahead(lambda n: n, items, threads=2)
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    results.close()
    assert next(taken) <= 3 + 4 * 2 + 1


def test_an_error_is_raised_at_its_items_place_after_the_results_before_it() -> None:
    def call(n: int) -> int:
        if n == 3:
            raise KeyError(n)
        return n

    results = map_ahead(call, range(10), threads=3)
    assert [next(results) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(KeyError):
        next(results)


def test_closing_early_cancels_the_calls_not_started() -> None:
    started: list[int] = []
    release = threading.Event()

    def call(n: int) -> int:
        started.append(n)
        release.wait(timeout=30)
        return n

    results = map_ahead(call, range(1000), threads=2)
    release.set()
    assert next(results) == 0
    results.close()
    assert len(started) <= 1 + 4 * 2 + 1


def test_threads_below_one_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        list(map_ahead(lambda n: n, [1], threads=0))
