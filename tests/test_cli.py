"""The `offload` command: run as a user would, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import offload_core
from offload_core.cli import driver_commands as cli_drivers
from offload_core.cli import main
from offload_core.memory import MemoryDriver

OFFLOAD = [sys.executable, "-m", "offload_core.cli"]


def offload(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*OFFLOAD, *args], capture_output=True, text=True, check=False, env={**os.environ, **(env or {})}
    )


def test_version() -> None:
    result = offload("--version")
    assert result.returncode == 0
    assert offload_core.__version__ in result.stdout


def test_help_everywhere() -> None:
    for args in ([], ["plugins"], ["drivers"], ["drivers", "check"]):
        result = offload(*args, "--help")
        assert result.returncode == 0, result.stderr
        assert "Usage:" in result.stdout


def test_plugins_json_names_distributions_and_versions() -> None:
    result = offload("plugins", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in map(json.loads, result.stdout.splitlines())}
    assert rows["filesystem"]["distribution"] == "offload-driver-filesystem"
    assert rows["filesystem"]["version"] == "0.1.0"
    assert rows["filesystem"]["drivers"] == [
        {"name": "filesystem", "aliases": ["local-directory", "file", "local"], "schemes": ["file"]}
    ]
    assert rows["offload_core.memory"]["drivers"][0]["schemes"] == ["memory"]


def test_drivers_check_passes_on_a_directory_and_leaves_nothing(tmp_path: Path) -> None:
    result = offload("drivers", "check", f"file://{tmp_path}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all checks passed" in result.stdout
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".offload-")] == ["offload-probe"]
    assert list((tmp_path / "offload-probe").iterdir()) == []


def test_drivers_check_with_named_driver_and_options(tmp_path: Path) -> None:
    result = offload("drivers", "check", "filesystem", "-o", f"root={tmp_path}", "-o", "fsync=false")
    assert result.returncode == 0, result.stdout + result.stderr


def test_drivers_check_fails_clearly_for_a_missing_driver() -> None:
    result = offload("drivers", "check", "s3://bucket", env={"OFFLOAD_CORE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert result.returncode == 1
    assert "install offload-driver-s3: pip install -e drivers/s3 in a clone" in result.stderr
    assert "offload_driver_s3-*.whl built there by make wheels" in result.stderr
    assert "Traceback" not in result.stderr


class LosesMetadata(MemoryDriver):
    def _write(self, key, parts, metadata, if_absent):  # type: ignore[no-untyped-def]
        return super()._write(key, parts, {}, if_absent)


def test_drivers_check_reports_the_failing_step_and_cleans_up(monkeypatch: pytest.MonkeyPatch) -> None:
    store = LosesMetadata()
    monkeypatch.setattr(cli_drivers, "open_driver", lambda url, **options: store)
    result = CliRunner().invoke(main, ["drivers", "check", "memory://"])
    assert result.exit_code == 1
    assert "ok   write" in result.output
    assert "FAIL stat: metadata came back as {}" in result.output
    assert list(store.list("")) == []


def test_a_root_that_is_a_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = offload("drivers", "check", f"file://{tmp_path}/file")
    assert result.returncode == 1
    assert "ConfigError" in result.stderr and "not a directory" in result.stderr


def test_drivers_check_json_lines_and_the_probe_as_a_url(tmp_path: Path) -> None:
    result = offload("drivers", "check", f"file://{tmp_path}", "--json")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["step"] for r in records[:-1]] == ["write", "stat", "read", "list", "conditional create", "delete"]
    assert all(r["ok"] for r in records) and records[-1]["warnings"] == []
    assert records[-1]["probe"].startswith(f"file://{tmp_path}/offload-probe/")


class Unreachable(MemoryDriver):
    def _stat(self, key):  # type: ignore[no-untyped-def]
        raise RuntimeError("a third-party SDK blew up\nwith a long traceback-ish message")


def test_drivers_check_reports_a_failing_step_once_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_drivers, "open_driver", lambda url, **options: Unreachable())
    result = CliRunner().invoke(main, ["drivers", "check", "memory://"])
    assert result.exit_code == 1
    assert result.output.count("FAIL") == 1 and "FAIL stat: RuntimeError: a third-party SDK blew up" in result.output
    assert "Traceback" not in result.output and "could not delete" not in result.output
    assert "memory://offload-probe/" in result.output
