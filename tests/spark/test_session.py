"""get_session picks its master the way Spark users expect (a fresh process each)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark

PROBE = (
    "from offload_core.spark import get_session;"
    "import sys; session = get_session(sys.argv[1] if len(sys.argv) > 1 else None);"
    "print(session.sparkContext.master, session.conf.get('spark.ui.enabled'),"
    " session.conf.get('spark.sql.python.filterPushdown.enabled'));"
    "print(session.read.format('pulsar-offload').load('file:///nowhere').columns[:2])"
)


@pytest.mark.parametrize(
    ("argv", "submit_args", "master"),
    [([], None, "local[*]"), ([], "--master local[1] pyspark-shell", "local[1]"), (["local[2]"], None, "local[2]")],
)
def test_master_from_argument_then_spark_configuration_then_local(
    argv: list[str], submit_args: str | None, master: str
) -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYSPARK_SUBMIT_ARGS"}
    if submit_args is not None:
        env["PYSPARK_SUBMIT_ARGS"] = submit_args
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True, timeout=180, check=True
    )
    assert done.stdout.splitlines() == [f"{master} false true", "['ledger_id', 'entry_id']"]
