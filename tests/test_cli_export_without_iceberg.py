"""``offload spark export`` on an install without the iceberg extra: one
line saying what to install, never a traceback. pyiceberg's absence is
simulated by an import hook that finds no ``pyiceberg``, with it and the
export package that imports it dropped from ``sys.modules`` meanwhile."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any
from unittest import mock

import pytest
from click.testing import CliRunner

import offload_core.spark
from offload_core.cli import main


class _NoPyiceberg(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname.split(".")[0] == "pyiceberg":
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


@pytest.mark.parametrize("verb", [["pulsar", "public/default/t", "--data-dir", "."],
                                  ["kafka", "file:///nowhere", "t"]], ids=["pulsar", "kafka"])  # fmt: skip
def test_the_export_names_the_extra_to_install(verb: list[str]) -> None:
    with (
        mock.patch.dict(sys.modules),
        mock.patch.dict(offload_core.spark.__dict__),
        mock.patch.object(sys, "meta_path", [_NoPyiceberg(), *sys.meta_path]),
    ):
        for name in [n for n in sys.modules if n.split(".")[0] == "pyiceberg" or "spark.export" in n]:
            del sys.modules[name]
        offload_core.spark.__dict__.pop("export", None)
        result = CliRunner().invoke(main, ["spark", "export", *verb, "--table", "ns.t"])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == (
        "Error: ConfigError: offload spark export needs pyiceberg (No module named 'pyiceberg'): "
        "pip install -e '.[iceberg]' in a clone of offload-core"
    )
