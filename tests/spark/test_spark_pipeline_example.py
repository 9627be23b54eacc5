"""examples/spark_pipeline.py runs end to end and prints what it found."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow]

EXAMPLE = Path(__file__).parents[2] / "examples" / "spark_pipeline.py"


def test_the_example_backfills_queries_verifies_and_plans_retention(tmp_path: Path) -> None:
    arguments = ["--data-dir", str(tmp_path / "data"), "--batches", "600", "--master", "local[2]"]
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *arguments], capture_output=True, text=True, timeout=300, check=True
    )
    lines = done.stdout.splitlines()
    assert "produced 6000 messages in 600 batched entries to orders/eu/checkout" in lines
    assert "backfill: 3 ledgers offloaded, 0 failed" in lines
    assert "pulsar-offload: 6000 messages" in lines
    assert "| de| 1200|" in lines and "|    2400|" in lines
    assert "verify: 3 ledgers, 0 defects" in lines
    assert "retention (dry run): 3 ledgers kept (referenced by the topic), 0 orphans" in lines
    assert "[Stage" not in done.stderr  # no console progress bar from sessions get_session builds
