"""Packing consecutive items into partitions under budgets, as Spark packs
small files into ``maxPartitionBytes`` (each counted with its open cost):
the one loop every source's planning packs its objects with. Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

__all__ = ["packed"]

T = TypeVar("T")


def packed(
    items: Iterable[T],
    budgets: Sequence[int],
    costs: Callable[[T], Sequence[int]],
    *,
    joins: Callable[[T, T], bool] = lambda first, item: True,
) -> Iterator[list[T]]:
    """``items`` in order, in runs: an item joins the run before it while
    every one of its ``costs`` keeps the run's sum within the ``budgets``
    at the same place, and ``joins(the run's first item, item)``; a run
    holds one item at least, whatever it costs. Items are taken as they
    come, one run held at a time."""
    run: list[T] = []
    sums = [0] * len(budgets)
    for item in items:
        cost = costs(item)
        if run and (
            any(total + more > budget for total, more, budget in zip(sums, cost, budgets, strict=True))
            or not joins(run[0], item)
        ):
            yield run
            run, sums = [], [0] * len(budgets)
        run.append(item)
        sums = [total + more for total, more in zip(sums, cost, strict=True)]
    if run:
        yield run
