"""Plugin discovery through entry points: listing, the allow-list and
autoload switches, and plugins that fail to load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import DriverNotInstalledError, PluginLoadError, PluginManager, default_plugin_manager, open_driver
from offload_core.errors import TransformNotInstalledError
from offload_core.memory import MemoryDriver
from offload_core.plugins import BUILTIN_PLUGINS, ENV_ALLOW, ENV_DISABLE_AUTOLOAD
from tests.plugins.fake_plugins import install_fake_distribution


def test_builtin_and_installed_plugins_are_listed_with_distributions() -> None:
    manager = PluginManager(environ={})
    by_name = {info.name: info for info in manager.plugins()}
    assert by_name["offload_core.memory"].distribution == "offload-core"
    assert by_name["filesystem"].distribution == "offload-driver-filesystem"
    assert by_name["filesystem"].group == "offload_core.drivers"
    assert by_name["filesystem"].version == "0.1.0"
    assert by_name["sqlite"].distribution == "offload-driver-sqlite-example"
    assert {spec.name for spec in manager.drivers()} >= {"memory", "filesystem", "sqlite"}


def test_disable_autoload_keeps_builtins_only() -> None:
    manager = PluginManager(environ={ENV_DISABLE_AUTOLOAD: "1"})
    assert [info.name for info in manager.plugins()] == list(BUILTIN_PLUGINS)
    assert isinstance(manager.open_driver("memory://"), MemoryDriver)
    wanted = r"pip install -e drivers/filesystem in a clone .* offload_driver_filesystem-\*\.whl"
    with pytest.raises(DriverNotInstalledError, match=wanted):
        manager.open_driver("file:///tmp/x")


def test_disable_autoload_with_allow_list_loads_the_named_ones() -> None:
    manager = PluginManager(environ={ENV_DISABLE_AUTOLOAD: "1", ENV_ALLOW: "filesystem"})
    assert {info.name for info in manager.plugins()} == {*BUILTIN_PLUGINS, "filesystem"}


def test_allow_list_restricts_autoload_by_entry_point_or_distribution() -> None:
    by_entry_point = PluginManager(environ={ENV_ALLOW: "sqlite"})
    assert {info.name for info in by_entry_point.plugins()} == {*BUILTIN_PLUGINS, "sqlite"}
    by_distribution = PluginManager(environ={ENV_ALLOW: "offload-driver-filesystem"})
    assert {info.name for info in by_distribution.plugins()} == {*BUILTIN_PLUGINS, "filesystem"}


def test_allow_list_naming_a_missing_plugin_is_an_error() -> None:
    with pytest.raises(PluginLoadError, match="'nosuch'.*installed:.*filesystem"):
        PluginManager(environ={ENV_ALLOW: "filesystem,nosuch"})


def test_plugin_that_fails_to_import_is_reported_by_name_and_the_others_work(site: Path, tmp_path: Path) -> None:
    install_fake_distribution(
        site, "fake-broken-driver", "broken", "fake_broken", "import a_module_that_does_not_exist\n"
    )
    manager = PluginManager(environ={})
    [failure] = manager.failed()
    assert (failure.plugin.name, failure.plugin.distribution) == ("broken", "fake-broken-driver")
    assert failure.error == "ModuleNotFoundError: No module named 'a_module_that_does_not_exist'"
    message = failure.describe()
    assert "'broken'" in message and "fake-broken-driver 9.9" in message and ENV_ALLOW in message
    assert "broken" not in {info.name for info in manager.plugins()}
    assert isinstance(manager.open_driver(f"file://{tmp_path}/bucket"), FilesystemDriver)
    # What nothing loaded may be what the broken plugin provides: the error names it.
    with pytest.raises(DriverNotInstalledError, match="'broken' in offload_core.drivers.*a_module_that_does_not"):
        manager.open_driver("broken://somewhere")
    with pytest.raises(TransformNotInstalledError, match="fake-broken-driver"):
        manager.transform("brokenzip")
    # ... and the allow-list is the way around it.
    assert PluginManager(environ={ENV_ALLOW: "filesystem"}).failed() == []


@pytest.mark.parametrize("group", ["offload_core.drivers", "offload_core.plugins"])
def test_every_command_works_beside_a_plugin_that_raises_at_import(tmp_path: Path, group: str) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_fake_distribution(site, "fake-raising", "raising", "fake_raising", "raise RuntimeError('boom')\n", group)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}

    def offload(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True,
                              env=env)  # fmt: skip

    def warned_once(result: subprocess.CompletedProcess[str]) -> bool:
        warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
        return len(warnings) == 1 and "'raising'" in warnings[0] and "RuntimeError: boom" in warnings[0]

    listed = offload("plugins")
    assert listed.returncode == 0 and warned_once(listed), listed.stderr
    assert "raising                  fake-raising 9.9" in listed.stdout
    assert "FAILED to import: RuntimeError: boom" in listed.stdout and "filesystem" in listed.stdout
    rows = [json.loads(line) for line in offload("plugins", "--json").stdout.splitlines()]
    assert {row["name"]: row["error"] for row in rows}["raising"] == "RuntimeError: boom"
    assert {row["name"]: row["error"] for row in rows}["filesystem"] is None
    works = offload("topics", "list", "--data-dir", str(tmp_path / "data"))
    assert works.returncode == 0 and warned_once(works) and works.stderr.count("\n") == 1, works.stderr
    missing = offload("ledgers", "ls", "raising://bucket")
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert "Error: DriverNotInstalledError" in missing.stderr and "'raising'" in missing.stderr.splitlines()[-1]


def test_duplicate_driver_names_name_both_distributions(site: Path) -> None:
    install_fake_distribution(
        site,
        "fake-dup-driver",
        "dup",
        "fake_dup",
        """
        from offload_core.hooks import hookimpl
        from offload_core.memory import MemoryDriver

        @hookimpl
        def offload_core_register_drivers(register):
            register(MemoryDriver, name="other", aliases=("FILESYSTEM",))
        """,
    )
    manager = PluginManager(environ={})
    with pytest.raises(PluginLoadError) as caught:
        manager.open_driver("memory://")
    message = str(caught.value)
    assert "'filesystem'" in message
    assert "offload-driver-filesystem 0.1.0" in message
    assert "fake-dup-driver 9.9" in message


def test_one_plugin_manager_per_process_until_the_environment_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_ALLOW, raising=False)
    monkeypatch.delenv(ENV_DISABLE_AUTOLOAD, raising=False)
    first = default_plugin_manager()
    assert default_plugin_manager() is first
    open_driver("memory://")
    assert default_plugin_manager() is first
    monkeypatch.setenv(ENV_DISABLE_AUTOLOAD, "1")
    restricted = default_plugin_manager()
    assert restricted is not first
    assert [spec.name for spec in restricted.drivers()] == ["memory"]
    monkeypatch.delenv(ENV_DISABLE_AUTOLOAD)
    assert default_plugin_manager() is first
