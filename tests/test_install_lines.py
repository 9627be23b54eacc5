"""Every install line the docs give works from a clone: no distribution of
ours is on a package index, so each ``pip install`` names a path in this
checkout (``-e drivers/s3``, ``./drivers/s3``, ``".[spark]"``), a wheel
``make wheels`` builds (``dist/offload_driver_s3-*.whl``), or a third-party
package; every driver and plugin README has its line; and ``make wheels``
builds every distribution the checkout holds."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from .test_docs_runnable import LINKED_DOCS, ROOT

# Installed from the package index: the emulators of the quick starts.
THIRD_PARTY = {"moto[server]", "gcp-storage-emulator"}
# A placeholder for the reader's own package (docs/plugin-authors.md).
PLACEHOLDERS = {"path/to/your/driver"}
INSTALL = re.compile(r"pip install (?P<args>[^`\n#;)]+)")
DISTRIBUTION_DIRS = sorted(path.parent for path in ROOT.glob("*/*/pyproject.toml") if path.parts[-3] != "tests")


def distributions() -> dict[str, Path]:
    """Every distribution of the checkout: its name and its directory."""
    found = {}
    for directory in [ROOT, *DISTRIBUTION_DIRS]:
        found[tomllib.loads((directory / "pyproject.toml").read_text())["project"]["name"]] = directory
    return found


def install_arguments() -> list[object]:
    cases: list[object] = []
    for path in LINKED_DOCS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            for match in INSTALL.finditer(line):
                for argument in shlex.split(match["args"].replace("`", "")):
                    if not argument.startswith("-"):
                        cases.append(pytest.param(argument, id=f"{path.relative_to(ROOT)}:{number}:{argument}"))
    return cases


def test_the_docs_give_install_lines() -> None:
    assert len(install_arguments()) > 10


@pytest.mark.parametrize("argument", install_arguments())
def test_every_install_line_works_from_a_clone(argument: str) -> None:
    if argument in THIRD_PARTY | PLACEHOLDERS:
        return
    wheel = re.fullmatch(r"dist/(?P<name>[a-z0-9_]+)-\*\.whl", argument)
    if wheel:
        assert wheel["name"] in {name.replace("-", "_") for name in distributions()}, argument
        return
    local = ROOT / re.sub(r"\[[^\]]*\]$", "", argument)
    assert (local / "pyproject.toml").is_file(), f"{argument} is not a distribution of this checkout (nor a wheel)"


@pytest.mark.parametrize("directory", DISTRIBUTION_DIRS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_driver_and_plugin_readme_says_how_to_install_it(directory: Path) -> None:
    if directory.parent.name == "examples":
        wanted = f"pip install -e {directory.relative_to(ROOT)}"
    else:
        wanted = f"pip install -e {directory.relative_to(ROOT)} "
    assert wanted in (directory / "README.md").read_text(), directory


def test_make_wheels_builds_every_distribution() -> None:
    make = shutil.which("make")
    assert make, "make is not installed"
    planned = subprocess.run([make, "-n", "wheels", "BIN=/bin"], cwd=ROOT, capture_output=True, text=True, check=True)
    (build,) = [line for line in planned.stdout.splitlines() if " wheel " in line]
    assert "--wheel-dir dist" in build
    built = {ROOT / part for part in shlex.split(build.partition("--wheel-dir dist")[2])}
    assert built == set(distributions().values())
