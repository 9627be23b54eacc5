"""A Spark worker started with the wrong Python says so, naming the
interpreter and the fix (PYSPARK_PYTHON / spark.pyspark.python)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

WRONG_WORKER = textwrap.dedent(
    """
    import sys, uuid
    from pyspark.sql import SparkSession
    from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, open_driver
    from offload_core.spark import PulsarOffloadDataSource, register_sources
    root, registration = sys.argv[1:]
    BlobStoreLedgerOffloader(open_driver("file://" + root)).offload(InMemoryReadHandle(1, [b"a"]), uuid.uuid4())
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
    if registration == "class":
        spark.dataSource.register(PulsarOffloadDataSource)
    else:
        register_sources(spark)  # the sources carrying the skip accumulator, as get_session registers them
    try:
        spark.read.format("pulsar-offload").load("file://" + root).count()
    except Exception as exc:
        print(str(exc))
    """
)


def worker_environment(python: Path) -> dict[str, str]:
    """This environment, with ``python`` every Python worker's interpreter:
    PySpark reads PYSPARK_PYTHON (spark-submit sets it from
    ``spark.pyspark.python``; a script's own builder setting is not read),
    and set, it stays (offload-core's .pth sets it only where it is unset)."""
    environment = {k: v for k, v in os.environ.items() if k != "PYSPARK_DRIVER_PYTHON"}
    environment["PYSPARK_PYTHON"] = str(python)
    return environment


@pytest.mark.parametrize("registration", ["class", "register_sources"])
def test_a_worker_without_offload_core_names_its_interpreter_and_the_fix(tmp_path: Path, registration: str) -> None:
    bare = Path(sys.base_prefix) / "bin" / "python3"
    probe = subprocess.run([str(bare), "-c", "import offload_core.spark"], capture_output=True, cwd=tmp_path)
    assert probe.returncode != 0, f"{bare} can import offload-core; this test needs an interpreter that cannot"
    environment = worker_environment(bare)
    result = subprocess.run([sys.executable, "-c", WRONG_WORKER, str(tmp_path / "bucket"), registration],
                            capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=300)  # fmt: skip
    assert "WorkerEnvironmentError" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"this Spark worker runs {bare}" in result.stdout
    assert "PYSPARK_PYTHON" in result.stdout and "spark.pyspark.python" in result.stdout


PLAIN_SESSION = textwrap.dedent(
    """
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
    for name, option in (("kafka-remote", "url"), ("pulsar-offload", "path")):
        try:
            spark.read.format(name).option(option, "file://" + sys.argv[1]).option("topic", "t").load().count()
        except Exception as exc:
            print(name, "->", str(exc).replace("\\n", " "))
    """
)


def test_a_plain_session_on_a_worker_that_sees_offload_core_but_cannot_import_it(tmp_path: Path) -> None:
    # No registration: PySpark's lookup finds the sources through the pyspark_* modules, which the
    # worker sees (a checkout on PYTHONPATH) but whose offload-core it cannot import (no dependencies).
    bare = Path(sys.base_prefix) / "bin" / "python3"
    root = Path(__file__).resolve().parents[2]
    environment = worker_environment(bare)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), environment.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", PLAIN_SESSION, str(tmp_path)],
                            capture_output=True, text=True, cwd=tmp_path, env=environment, timeout=300)  # fmt: skip
    lines = [line for line in result.stdout.splitlines() if "->" in line]
    assert len(lines) == 2, result.stdout[-3000:] + result.stderr[-3000:]
    for line in lines:
        assert "DATA_SOURCE_NOT_FOUND" not in line, line
        assert "WorkerEnvironmentError: this Spark worker runs" in line and str(bare) in line, line
        assert "PYSPARK_PYTHON" in line and "get_session()" in line
