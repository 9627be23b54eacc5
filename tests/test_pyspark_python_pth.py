"""The line offload-core installs at the root of site-packages
(``pth/offload_core_pyspark_python.pth``): at every start of that Python,
``PYSPARK_DRIVER_PYTHON`` (the interpreter Spark runs the data sources it
finds by itself with, on the driver and the executors) names it, unless
``PYSPARK_DRIVER_PYTHON`` or ``PYSPARK_PYTHON`` is already set.
``PYSPARK_PYTHON`` (the one every other Python worker runs) is left alone.

Each case starts a Python with ``-S`` (no site-packages, so no installed copy
of the file runs) and has ``site.addsitedir`` process the checkout's copy,
as ``site`` does with site-packages at start-up."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PTH = ROOT / "pth" / "offload_core_pyspark_python.pth"

PROBE = (
    "import os, site, sys; {before}site.addsitedir(sys.argv[1]); "
    "print(os.environ.get('PYSPARK_DRIVER_PYTHON'), os.environ.get('PYSPARK_PYTHON'))"
)
VARIABLES = ("PYSPARK_DRIVER_PYTHON", "PYSPARK_PYTHON")


def after_start(set_before: dict[str, str], *, before: str = "") -> list[str]:
    """``[PYSPARK_DRIVER_PYTHON, PYSPARK_PYTHON]`` once a Python started with
    ``set_before`` has processed the file (``"None"`` where unset)."""
    environment = {name: value for name, value in os.environ.items() if name not in VARIABLES}
    environment.update(set_before)
    result = subprocess.run([sys.executable, "-S", "-c", PROBE.format(before=before), str(PTH.parent)],
                            capture_output=True, text=True, env=environment, check=True)  # fmt: skip
    return result.stdout.split()


def test_with_neither_set_the_sources_run_on_the_python_starting_and_other_workers_are_left_alone() -> None:
    assert after_start({}) == [sys.executable, "None"]


def test_a_driver_python_already_set_is_never_overridden() -> None:
    assert after_start({"PYSPARK_DRIVER_PYTHON": "/opt/other/bin/python3"}) == ["/opt/other/bin/python3", "None"]


def test_a_pyspark_python_set_keeps_choosing_the_sources_python_as_spark_would() -> None:
    # Spark falls back to PYSPARK_PYTHON where PYSPARK_DRIVER_PYTHON is unset: a cluster's executors' Python
    # (set for them) must not be replaced by this host's path.
    assert after_start({"PYSPARK_PYTHON": "/opt/env/bin/python"}) == ["None", "/opt/env/bin/python"]
    assert after_start({"PYSPARK_PYTHON": "python3"}) == ["None", "python3"]


def test_a_python_that_does_not_know_its_own_path_sets_nothing() -> None:
    # sys.executable is empty in some embedded interpreters: an empty value would break Spark's fallback.
    assert after_start({}, before="sys.executable = ''; ") == ["None", "None"]


def test_the_wheel_and_the_editable_install_put_it_at_the_root_of_site_packages() -> None:
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert build["force-include"] == {str(PTH.relative_to(ROOT)): PTH.name}
