"""Pushed filters as column bounds (no Spark session)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

pytest.importorskip("pyspark")
from pyspark.sql.datasource import EqualTo, GreaterThan, In, LessThanOrEqual, StringStartsWith  # noqa: E402

from offload_core.spark.column_bounds import ANY_VALUE  # noqa: E402
from offload_core.spark.pushdown import COLUMN_VALUES, narrowed  # noqa: E402

T = datetime(2025, 6, 1, 12, 0, 0, 250_000, tzinfo=UTC)
T_US = int(T.timestamp()) * 1_000_000 + 250_000


def test_timestamps_become_microseconds_since_the_epoch_whatever_their_zone() -> None:
    micros = COLUMN_VALUES["publish_time"]
    assert micros(T) == T_US
    assert micros(T.astimezone(timezone(timedelta(hours=-5)))) == T_US
    assert micros(T.replace(tzinfo=None)) is None  # a naive value bounds nothing
    assert micros(5) is None


def test_comparisons_narrow_and_anything_else_is_left_to_spark() -> None:
    column = ("publish_time",)
    bounds = narrowed(ANY_VALUE, GreaterThan(column, T), COLUMN_VALUES["publish_time"])
    bounds = narrowed(bounds, LessThanOrEqual(column, T + timedelta(seconds=1)), COLUMN_VALUES["publish_time"])
    assert (bounds.low, bounds.high) == (T_US + 1, T_US + 1_000_000)
    assert narrowed(bounds, StringStartsWith(column, "x"), COLUMN_VALUES["publish_time"]) == bounds
    assert narrowed(ANY_VALUE, In(("entry_id",), (1, 2)), COLUMN_VALUES["entry_id"]).values == frozenset({1, 2})
    assert narrowed(ANY_VALUE, In(("entry_id",), (1, "x")), COLUMN_VALUES["entry_id"]) == ANY_VALUE
    assert narrowed(ANY_VALUE, EqualTo(("entry_id",), True), COLUMN_VALUES["entry_id"]) == ANY_VALUE
