"""The line offload-core installs at the root of site-packages
(``pth/offload_core_pyspark_python.pth``): at every start of that Python,
``PYSPARK_PYTHON`` names it, unless ``PYSPARK_PYTHON`` is already set.

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

PROBE = "import os, site, sys; {before}site.addsitedir(sys.argv[1]); print(os.environ.get('PYSPARK_PYTHON'))"


def pyspark_python_after_start(set_before: str | None, *, before: str = "") -> str:
    environment = {name: value for name, value in os.environ.items() if name != "PYSPARK_PYTHON"}
    if set_before is not None:
        environment["PYSPARK_PYTHON"] = set_before
    result = subprocess.run([sys.executable, "-S", "-c", PROBE.format(before=before), str(PTH.parent)],
                            capture_output=True, text=True, env=environment, check=True)  # fmt: skip
    return result.stdout.strip()


def test_an_unset_pyspark_python_names_the_python_starting() -> None:
    assert pyspark_python_after_start(None) == sys.executable


def test_a_pyspark_python_already_set_is_never_overridden() -> None:
    assert pyspark_python_after_start("/opt/other/bin/python3") == "/opt/other/bin/python3"
    assert pyspark_python_after_start("python3") == "python3"


def test_a_python_that_does_not_know_its_own_path_sets_nothing() -> None:
    # sys.executable is empty in some embedded interpreters: an empty PYSPARK_PYTHON would break Spark's fallback.
    assert pyspark_python_after_start(None, before="sys.executable = ''; ") == "None"


def test_the_wheel_and_the_editable_install_put_it_at_the_root_of_site_packages() -> None:
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert build["force-include"] == {str(PTH.relative_to(ROOT)): PTH.name}
