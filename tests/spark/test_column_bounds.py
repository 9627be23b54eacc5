"""Bounds from pushed-down filters: what they admit and which blocks they keep."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from offload_core.spark.column_bounds import ANY_VALUE, ColumnBounds

small = st.integers(min_value=-5, max_value=40)


@st.composite
def bounds(draw: st.DrawFn) -> ColumnBounds:
    result = ANY_VALUE
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["low", "high", "in"]))
        if kind == "low":
            result = result.at_least(draw(small))
        elif kind == "high":
            result = result.at_most(draw(small))
        else:
            result = result.one_of(frozenset(draw(st.lists(small, max_size=5))))
    return result


@given(bounds(), small, st.integers(min_value=0, max_value=20))
def test_a_range_overlaps_exactly_when_some_value_in_it_is_admitted(b: ColumnBounds, first: int, span: int) -> None:
    last = first + span
    assert b.overlaps(first, last) == any(b.admits(value) for value in range(first, last + 1))


def test_constraints_combine_as_and() -> None:
    b = ANY_VALUE.at_least(3).at_least(5).at_most(9).one_of(frozenset({1, 5, 7, 12})).one_of(frozenset({7, 5}))
    assert [value for value in range(15) if b.admits(value)] == [5, 7]
    assert not b.overlaps(8, 11) and b.overlaps(6, 7)
    assert ANY_VALUE.admits(-(2**63)) and ANY_VALUE.overlaps(0, 0)
