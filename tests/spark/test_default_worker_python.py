"""A plain SparkSession, started by a script run with the Python offload-core
is installed in (its virtualenv not activated, no PYSPARK_PYTHON), finds and
runs both sources: the .pth offload-core installs at the root of
site-packages makes that Python the one Spark runs the data sources it finds
by itself with (``PYSPARK_DRIVER_PYTHON``), where Spark would otherwise take
``python3`` from PATH, a Python that sees nothing of ours (Spark's
``DATA_SOURCE_NOT_FOUND``, before any of our code runs)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
PTH_DIRECTORY = ROOT / "pth"

PLAIN_SESSION = textwrap.dedent(
    """
    import os, sys, uuid
    sys.path[:0] = sys.argv[2].split(os.pathsep)  # the code under test, for this driver only
    from pyspark.sql import SparkSession
    from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, open_driver
    bucket = "file://" + sys.argv[1]
    BlobStoreLedgerOffloader(open_driver(bucket)).offload(InMemoryReadHandle(1, [b"a", b"b"]), uuid.uuid4())
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
    rows = spark.read.format("pulsar-offload").load(bucket).select("entry_id", "payload").collect()
    print("pulsar-offload", [(row.entry_id, bytes(row.payload)) for row in rows])
    print("kafka-remote", spark.read.format("kafka-remote").option("url", bucket).option("topic", "t").load().columns)
    """
)


def run_plain_session(tmp_path: Path, *, pyspark_python: str | None = None) -> subprocess.CompletedProcess[str]:
    """The script above, run as ``/path/to/.venv/bin/python script.py`` would
    be with offload-core installed: no PYTHONPATH, ``python3`` on PATH a
    Python without pyspark or offload-core, PYSPARK_PYTHON ``pyspark_python``."""
    bare = Path(sys.base_prefix) / "bin" / "python3"
    path = tmp_path / "path"
    path.mkdir()
    (path / "python3").symlink_to(bare)
    # No PYTHONPATH: Spark hands it to every worker, and this worker must see nothing of ours.
    unset = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")
    environment = {name: value for name, value in os.environ.items() if name not in unset}
    environment["PATH"] = os.pathsep.join([str(path), environment["PATH"]])
    if pyspark_python is not None:
        environment["PYSPARK_PYTHON"] = pyspark_python
    for module in ("pyspark", "offload_core", "pyspark_pulsar_offload"):
        probe = subprocess.run(
            ["python3", "-c", f"import {module}"], cwd=tmp_path, env=environment, capture_output=True
        )
        assert probe.returncode != 0, f"python3 on PATH ({bare}) can import {module}; this test needs one that cannot"
    # What site does at start-up with the .pth at the root of site-packages (the checkout's copy), then the script.
    start = f"import site; site.addsitedir({str(PTH_DIRECTORY)!r})\n"
    driver_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-c", start + PLAIN_SESSION, str(tmp_path / "bucket"), driver_path],
                          capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=300)  # fmt: skip


def test_a_plain_session_runs_its_workers_on_the_python_offload_core_is_installed_in(tmp_path: Path) -> None:
    result = run_plain_session(tmp_path)
    errors = [line for line in result.stderr.splitlines() if "Exception" in line or "Error" in line]
    assert "pulsar-offload [(0, b'a'), (1, b'b')]" in result.stdout, "\n".join(errors[-5:]) or result.stderr[-3000:]
    columns = "['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'timestampType']"
    assert f"kafka-remote {columns}" in result.stdout


def test_a_pyspark_python_that_cannot_see_offload_core_is_still_obeyed(tmp_path: Path) -> None:
    # Set on purpose, it wins: Spark's own error, with the fix in the README.
    result = run_plain_session(tmp_path, pyspark_python="python3")
    assert "DATA_SOURCE_NOT_FOUND" in result.stderr and "pulsar-offload" in result.stderr, result.stderr[-3000:]
    assert "pulsar-offload [" not in result.stdout
