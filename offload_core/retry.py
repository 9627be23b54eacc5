"""Bounded retries with exponential backoff and jitter, for transient errors."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import ConfigError, TransientStorageError

__all__ = ["RetryPolicy", "call_with_retries"]

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` tries in all; the wait before try ``n+1`` is uniformly
    random in ``[0, min(max_delay, base_delay * 2**n)]`` ("full jitter")."""

    attempts: int = 3
    base_delay: float = 0.05
    max_delay: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ConfigError(f"retry attempts must be at least 1, got {self.attempts}")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ConfigError("retry delays must not be negative")

    def worst_case_wait(self) -> float:
        """The longest total backoff before the last attempt's error is
        raised (the requests' own time comes on top)."""
        return float(sum(min(self.max_delay, self.base_delay * 2**attempt) for attempt in range(self.attempts - 1)))

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The wait after failed attempt number ``attempt`` (0-based)."""
        cap = min(self.max_delay, self.base_delay * 2**attempt)
        return (rng or random).uniform(0, cap)


def call_with_retries(
    action: Callable[[], T],
    policy: RetryPolicy,
    *,
    retry_on: tuple[type[BaseException], ...] = (TransientStorageError,),
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run ``action``, retrying on ``retry_on`` up to ``policy.attempts``
    times in all; the last failure is raised with a note of the count."""
    for attempt in range(policy.attempts):
        try:
            return action()
        except retry_on as exc:
            if attempt == policy.attempts - 1:
                exc.add_note(f"gave up after {policy.attempts} attempts")
                raise
            sleep(policy.delay(attempt))
    raise AssertionError("unreachable: the loop returns or raises")
