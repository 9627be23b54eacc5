"""Filters Spark pushes to the ``pulsar-offload`` reader, as bounds on the
columns they constrain: ``ledger_id`` and ``entry_id`` prune the ledgers
and blocks planned; ``publish_time`` (in microseconds since the epoch, as
Spark holds timestamps) drops decoded messages in the task before any
Arrow is built. Every filter is also handed back to Spark, which applies
it again, so a bound only ever reads less, never answers differently."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
)

from .column_bounds import ColumnBounds

__all__ = ["COLUMN_VALUES", "narrowed"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _integer(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _micros(value: object) -> int | None:
    """Microseconds since the epoch of an aware datetime (Spark hands
    timestamp literals over in UTC); ``None`` for anything else, which
    then bounds nothing."""
    if not isinstance(value, datetime) or value.tzinfo is None:
        return None
    return (value - _EPOCH) // timedelta(microseconds=1)


COLUMN_VALUES: dict[str, Callable[[object], int | None]] = {
    "ledger_id": _integer,
    "entry_id": _integer,
    "publish_time": _micros,
}
"""The columns bounds are kept for, and how a filter's value becomes the
integer the bound compares."""


def narrowed(bounds: ColumnBounds, pushed: Filter, value_of: Callable[[object], int | None]) -> ColumnBounds:
    """``bounds`` and what ``pushed`` adds; a filter it cannot read (another
    kind, or a value ``value_of`` does not convert) adds nothing."""
    if isinstance(pushed, In):
        values = [value_of(item) for item in pushed.value]
        if all(item is not None for item in values):
            return bounds.one_of(frozenset(item for item in values if item is not None))
        return bounds
    value = value_of(getattr(pushed, "value", None))
    if value is None:
        return bounds
    if isinstance(pushed, EqualTo):
        return bounds.one_of(frozenset({value}))
    if isinstance(pushed, GreaterThan):
        return bounds.at_least(value + 1)
    if isinstance(pushed, GreaterThanOrEqual):
        return bounds.at_least(value)
    if isinstance(pushed, LessThan):
        return bounds.at_most(value - 1)
    if isinstance(pushed, LessThanOrEqual):
        return bounds.at_most(value)
    return bounds
