"""An accumulated skip as skipped_objects' row (no Spark session)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

pytest.importorskip("pyspark")
from pyspark.sql.types import TimestampType  # noqa: E402

from offload_core.spark.data_loss import _row  # noqa: E402


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process's local zone is America/New_York (its clocks go back an hour on 2026-11-01)."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("hour_utc", [5, 6])  # 01:30 in New York twice: daylight time, then standard time
def test_a_skip_keeps_its_instant_when_local_clocks_repeat_an_hour(new_york: None, hour_utc: int) -> None:
    ts = datetime(2026, 11, 1, hour_utc, 30, 0, 250_000, tzinfo=UTC).timestamp()
    record = {"source": "kafka-remote", "ts": ts, "message": "skipped", "skip_id": "0" * 32}
    # What createDataFrame stores for the ts column: microseconds since the epoch.
    assert TimestampType().toInternal(_row(record)[0]) == round(ts * 1_000_000)
