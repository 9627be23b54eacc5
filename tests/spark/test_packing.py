"""The one packing loop every source plans with (``spark/packing.py``):
greedy, in order, within every budget unless an item alone exceeds it,
never joining what ``joins`` keeps apart."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from offload_core.spark.packing import packed

_items = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50), st.integers(0, 5)), max_size=40)


@given(_items, st.integers(1, 100), st.integers(1, 10))
def test_runs_are_greedy_in_order_and_within_every_budget(
    items: list[tuple[int, int, int]], bytes_budget: int, count_budget: int
) -> None:
    budgets = (bytes_budget, count_budget)

    def costs(item: tuple[int, int, int]) -> tuple[int, int]:
        return item[1], item[2]

    def joins(first: tuple[int, int, int], item: tuple[int, int, int]) -> bool:
        return first[0] == item[0]

    runs = list(packed(items, budgets, costs, joins=joins))
    assert [item for run in runs for item in run] == items and all(runs)
    for run in runs:
        assert len({item[0] for item in run}) == 1
        sums = [sum(costs(item)[at] for item in run) for at in range(2)]
        assert len(run) == 1 or all(total <= budget for total, budget in zip(sums, budgets, strict=True))
    for run, following in zip(runs, runs[1:], strict=False):
        # The next run's first item could not have joined this one.
        after = [sum(costs(item)[at] for item in run) + costs(following[0])[at] for at in range(2)]
        assert following[0][0] != run[0][0] or any(total > budget for total, budget in zip(after, budgets, strict=True))
