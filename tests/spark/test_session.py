"""get_session picks its master the way Spark users expect."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from offload_core.spark.session import choose_master, choose_python

pytestmark = pytest.mark.spark

PROBE = (
    "from offload_core.spark import get_session;"
    "import sys; session = get_session(sys.argv[1] if len(sys.argv) > 1 else None);"
    "print(session.sparkContext.master, session.conf.get('spark.ui.enabled'),"
    " session.conf.get('spark.sql.python.filterPushdown.enabled'),"
    " session.conf.get('spark.sql.pyspark.worker.logging.enabled'));"
    "print(session.read.format('pulsar-offload').load('file:///nowhere').columns[:2])"
)


@pytest.mark.parametrize(
    ("requested", "configured", "master"),
    [(None, None, "local[*]"), (None, "local[1]", "local[1]"), ("local[2]", "local[1]", "local[2]"),
     ("spark://h:7077", None, "spark://h:7077")],
)  # fmt: skip
def test_the_argument_wins_then_spark_configuration_then_local(
    requested: str | None, configured: str | None, master: str
) -> None:
    assert choose_master(requested, configured) == master


@pytest.mark.parametrize(
    ("configured", "environment", "python"),
    [("/opt/py", "/env/py", "/opt/py"), (None, "/env/py", "/env/py"), (None, None, "/this/python")],
)
def test_workers_run_spark_pyspark_python_then_pyspark_python_then_this_interpreter(
    configured: str | None, environment: str | None, python: str
) -> None:
    assert choose_python(configured, environment, "/this/python") == python


def test_a_new_session_takes_its_master_from_spark_configuration() -> None:
    # One fresh JVM (the slow part) for the case only a real one shows:
    # PYSPARK_SUBMIT_ARGS reaches the conf get_session reads.
    env = {**os.environ, "PYSPARK_SUBMIT_ARGS": "--master local[1] pyspark-shell"}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=180,
                          check=True)  # fmt: skip
    assert done.stdout.splitlines() == ["local[1] false true true", "['ledger_id', 'entry_id']"]


def test_a_master_and_a_connect_server_together_are_refused_naming_neither_secret() -> None:
    env = {**os.environ, "SPARK_REMOTE": "sc://127.0.0.1:1/;token=s3cret"}
    code = "from offload_core.spark import get_session; get_session('local[1]')"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180,
                          check=False)  # fmt: skip
    assert done.returncode != 0
    assert "ConfigError: a master ('local[1]') and a Spark Connect server (SPARK_REMOTE or spark.remote)" in done.stderr
    assert "s3cret" not in done.stderr
