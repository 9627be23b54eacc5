"""What pushed-down filters say about an integer column (``ledger_id``,
``entry_id``): inclusive bounds and, from ``=`` / ``IN``, the allowed values.
Pure, so the pruning it drives is tested without Spark."""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["ANY_VALUE", "ColumnBounds"]


@dataclass(frozen=True)
class ColumnBounds:
    """The AND of every constraint seen; no constraint admits everything."""

    low: int | None = None
    high: int | None = None
    values: frozenset[int] | None = None

    def admits(self, value: int) -> bool:
        return (
            (self.low is None or value >= self.low)
            and (self.high is None or value <= self.high)
            and (self.values is None or value in self.values)
        )

    def overlaps(self, first: int, last: int) -> bool:
        """Whether any value in ``first..last`` (inclusive) is admitted."""
        if (self.low is not None and last < self.low) or (self.high is not None and first > self.high):
            return False
        return self.values is None or any(first <= value <= last and self.admits(value) for value in self.values)

    def at_least(self, value: int) -> ColumnBounds:
        return replace(self, low=value if self.low is None else max(self.low, value))

    def at_most(self, value: int) -> ColumnBounds:
        return replace(self, high=value if self.high is None else min(self.high, value))

    def one_of(self, values: frozenset[int]) -> ColumnBounds:
        return replace(self, values=values if self.values is None else self.values & values)


ANY_VALUE = ColumnBounds()
