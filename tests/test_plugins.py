"""Plugin discovery, driver lookup and their error paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import (
    ConfigError,
    DriverNotInstalledError,
    Event,
    PluginLoadError,
    PluginManager,
    default_plugin_manager,
    hookimpl,
    open_driver,
)
from offload_core.errors import TransformNotInstalledError
from offload_core.memory import MemoryDriver
from offload_core.plugins import BUILTIN_PLUGINS, ENV_ALLOW, ENV_DISABLE_AUTOLOAD


def install_fake_distribution(
    site: Path, dist: str, entry_point: str, module: str, source: str, group: str = "offload_core.drivers"
) -> None:
    """Make an installed-looking distribution under ``site`` (on sys.path)."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 9.9\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry_point} = {module}\n")


def with_drivers(*registrations: tuple[Any, dict[str, Any]]) -> PluginManager:
    """A plugin manager (no entry points) holding one plugin that registers
    each ``(driver, keyword arguments)`` as a third party's plugin would."""

    class Plugin:
        @hookimpl
        def offload_core_register_drivers(self, register):  # type: ignore[no-untyped-def]
            for driver, options in registrations:
                register(driver, **options)

    manager = PluginManager(load_entry_points=False)
    manager.register(Plugin())
    return manager


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in [m for m in sys.modules if m.startswith("fake_")]:
        del sys.modules[name]


def test_builtin_and_installed_plugins_are_listed_with_distributions() -> None:
    manager = PluginManager(environ={})
    by_name = {info.name: info for info in manager.plugins()}
    assert by_name["offload_core.memory"].distribution == "offload-core"
    assert by_name["filesystem"].distribution == "offload-driver-filesystem"
    assert by_name["filesystem"].group == "offload_core.drivers"
    assert by_name["filesystem"].version == "0.1.0"
    assert by_name["sqlite"].distribution == "offload-driver-sqlite-example"
    assert {spec.name for spec in manager.drivers()} >= {"memory", "filesystem", "sqlite"}


def test_open_driver_by_url_name_and_alias(tmp_path: Path) -> None:
    manager = PluginManager(environ={})
    by_url = manager.open_driver(f"file://{tmp_path}/bucket")
    assert isinstance(by_url, FilesystemDriver)
    assert by_url.root == f"{tmp_path}/bucket"
    by_name = manager.open_driver("filesystem", root=str(tmp_path / "b2"))
    assert isinstance(by_name, FilesystemDriver)
    assert isinstance(manager.open_driver("FileSystem", root=str(tmp_path / "b3")), FilesystemDriver)
    assert isinstance(manager.open_driver("memory"), MemoryDriver)


def test_module_level_open_driver_discovers_plugins(tmp_path: Path) -> None:
    driver = open_driver(f"file://{tmp_path}/x")
    driver.write("k", b"v")
    assert open_driver(f"file://{tmp_path}/x").read("k") == b"v"


def test_memory_urls_open_isolated_stores() -> None:
    first = open_driver("memory://")
    second = open_driver("memory://")
    first.write("k", b"v")
    assert not second.exists("k")


@pytest.mark.parametrize(
    ("wanted", "distribution"),
    [
        ("s3://bucket/prefix", "offload-driver-s3"),
        ("aws-s3", "offload-driver-s3"),
        ("S3", "offload-driver-s3"),
        ("gs://bucket", "offload-driver-gcs"),
        ("google-cloud-storage", "offload-driver-gcs"),
        ("azureblob", "offload-driver-azure"),
        ("abfs://container", "offload-driver-azure"),
        ("hdfs://namenode/path", "offload-driver-hdfs"),
    ],
)
def test_missing_driver_names_the_distribution_to_install(wanted: str, distribution: str) -> None:
    only_builtins = PluginManager(environ={ENV_DISABLE_AUTOLOAD: "1"})
    clone = "drivers/" + distribution.removeprefix("offload-driver-")
    wheel = distribution.replace("-", "_")
    with pytest.raises(DriverNotInstalledError, match=rf"install {distribution}: pip install -e {clone} in a clone "
                       rf"of offload-core, or pip install {wheel}-\*\.whl built there by make wheels"):  # fmt: skip
        only_builtins.open_driver(wanted)


def test_unknown_driver_lists_what_is_installed() -> None:
    with pytest.raises(DriverNotInstalledError, match="filesystem.*memory") as caught:
        open_driver("filesytem")
    assert "did you mean 'filesystem'" in str(caught.value)
    assert isinstance(caught.value, ConfigError)


def test_unknown_option_is_a_config_error_with_a_suggestion(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'roott'.*did you mean 'root'"):
        open_driver("filesystem", roott=str(tmp_path))
    with pytest.raises(ConfigError, match="'creat'.*did you mean 'create'"):
        open_driver(f"file://{tmp_path}", creat=False)


def test_missing_root_without_create_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        open_driver("filesystem", root=str(tmp_path / "missing"), create=False)


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


def test_duplicate_scheme_is_an_error_too() -> None:
    manager = with_drivers((MemoryDriver, dict(name="memory2", schemes=("memory",))))
    with pytest.raises(PluginLoadError, match="URL scheme 'memory'"):
        manager.drivers()


def test_registering_a_non_driver_is_an_error() -> None:
    manager = with_drivers((dict, dict(name="nope")))
    with pytest.raises(PluginLoadError, match="not a StorageDriver"):
        manager.drivers()


def test_a_driver_registered_by_path_is_imported_only_when_used(site: Path) -> None:
    (site / "lazy_store.py").write_text(
        "from offload_core.memory import MemoryDriver\n\n\nclass LazyDriver(MemoryDriver):\n    pass\n"
    )
    (site / "not_a_driver.py").write_text("class Plain:\n    pass\n")

    manager = with_drivers(
        ("lazy_store:LazyDriver", dict(name="lazy", schemes=("lazy",))),
        ("not_a_driver:Plain", dict(name="plain")),
        ("no_such_module_here:Driver", dict(name="absent")),
    )
    assert {"lazy", "plain", "absent"} <= {spec.name for spec in manager.drivers()}
    assert "lazy_store" not in sys.modules  # listed, not imported
    driver = manager.open_driver("lazy://")
    assert type(driver).__name__ == "LazyDriver" and "lazy_store" in sys.modules
    driver.close()
    with pytest.raises(PluginLoadError, match="not a StorageDriver"):
        manager.open_driver("plain")
    with pytest.raises(PluginLoadError, match=r"'absent' of plugin .*no_such_module_here:Driver.*does not load"):
        manager.open_driver("absent")


@pytest.mark.parametrize("path", ["no_colon_here", "module:", ":Class", "bad module:Class", "mod:Cls-1"])
def test_a_malformed_driver_path_is_refused_when_registered(path: str) -> None:
    manager = with_drivers((path, dict(name="broken")))
    with pytest.raises(PluginLoadError, match="write it as 'module:Class'"):
        manager.drivers()


def test_the_cloud_drivers_register_without_importing_their_sdks() -> None:
    import subprocess

    probe = (
        "import sys\nfrom offload_core import PluginManager\n"
        "names = {spec.name for spec in PluginManager().drivers()}\n"
        "assert {'s3', 'gcs', 'azure', 'hdfs'} <= names, names\n"
        "loaded = [m for m in ('s3fs', 'gcsfs', 'azure.storage.blob', 'pyarrow.fs') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_events_offloaders_and_transforms_reach_plugins() -> None:
    seen: list[Event] = []

    class Reverse:
        name, version, distribution = "reverse", 1, "offload-plugin-reverse"

        def for_writing(self, *, object_id):  # type: ignore[no-untyped-def]
            return self, {}

        def for_reading(self, params, *, version, object_id):  # type: ignore[no-untyped-def]
            return self

        def encode(self, chunk: bytes, index: int) -> bytes:
            return chunk[::-1]

        def decode(self, stored: bytes, index: int) -> bytes:
            return stored[::-1]

    def factory(driver: object) -> str:
        return "an offloader"

    class Plugin:
        @hookimpl
        def offload_core_on_event(self, event: Event) -> None:
            seen.append(event)

        @hookimpl
        def offload_core_register_transforms(self, register):  # type: ignore[no-untyped-def]
            register(Reverse())

        @hookimpl
        def offload_core_register_offloaders(self, register):  # type: ignore[no-untyped-def]
            register(factory, name="blobby", aliases=("Blob",))

    manager = PluginManager(load_entry_points=False)
    manager.register(Plugin())
    manager.emit(Event("offload.finished", {"bytes": 3}))
    assert seen == [Event("offload.finished", {"bytes": 3})]
    assert manager.transform("reverse").for_reading({}, version=1, object_id=None).decode(b"cba", 0) == b"abc"
    assert manager.offloader("blob").factory is factory
    with pytest.raises(
        TransformNotInstalledError, match="no chunk transform named 'zstd'.*install offload-plugin-zstd"
    ):
        manager.transform("zstd", distribution="offload-plugin-zstd")
    with pytest.raises(ConfigError, match="no ledger offloader named 'x'.*blobby"):
        manager.offloader("x")


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


def test_registration_hooks_go_through_pluggy_and_are_attributed() -> None:
    class Sqlish(MemoryDriver):
        pass

    class Plugin:
        @hookimpl
        def offload_core_register_drivers(self, register):  # type: ignore[no-untyped-def]
            register(Sqlish, name="sqlish", schemes=("sqlish",))

    class Other:
        @hookimpl
        def offload_core_register_drivers(self, register):  # type: ignore[no-untyped-def]
            register(MemoryDriver, name="other-memory")

    manager = PluginManager(load_entry_points=False)
    manager.register(Plugin())
    manager.register(Other())
    traced: list[str] = []
    undo = manager._pm.add_hookcall_monitoring(lambda name, impls, kwargs: traced.append(name),
                                               lambda outcome, name, impls, kwargs: None)  # fmt: skip
    try:
        spec = manager.driver("sqlish")
    finally:
        undo()
    assert "offload_core_register_drivers" in traced
    assert spec.plugin.name == "Plugin"
    assert manager.driver("other-memory").plugin.name == "Other"
    assert manager.driver("memory").plugin.name == "offload_core.memory"


def test_a_type_error_inside_a_driver_is_its_bug_not_a_config_error() -> None:
    class Buggy(MemoryDriver):
        def __init__(self, depth: int = 1) -> None:
            super().__init__()
            len(depth)  # type: ignore[arg-type]

    manager = with_drivers((Buggy, dict(name="buggy")))
    with pytest.raises(TypeError, match="has no len"):
        manager.open_driver("buggy")
    with pytest.raises(ConfigError, match="does not take the option 'dept'; did you mean 'depth'"):
        manager.open_driver("buggy", dept=2)


def test_option_typos_through_a_url_name_the_valid_options() -> None:
    with pytest.raises(ConfigError, match="does not take the option 'endpoint_url'; did you mean 'endpoint'"):
        open_driver("s3://some-bucket", endpoint_url="http://127.0.0.1:1")
    with pytest.raises(ConfigError, match="needs the option"):
        PluginManager().open_driver("filesystem")


def test_the_broker_finds_offloaders_by_the_driver_they_serve() -> None:
    def packed(driver: object) -> str:
        return "packed"

    class Plugin:
        @hookimpl
        def offload_core_register_offloaders(self, register):  # type: ignore[no-untyped-def]
            register(packed, name="packed", drivers=("memory",))

    manager = PluginManager(load_entry_points=False)
    assert manager.offloader_for_driver("memory").name == "blobstore"
    manager.register(Plugin())
    assert manager.offloader_for_driver("memory").name == "packed"
    assert manager.offloader_for_driver("memory://").name == "packed"
    with pytest.raises(DriverNotInstalledError):
        manager.offloader_for_driver("nonesuch")


def test_a_transform_written_before_chunks_were_bound_is_refused_by_name() -> None:
    """Its methods lack ``object_id`` (and ``version``): before, the first
    write failed with a bare TypeError, a traceback from the CLI."""

    class OldReverse:
        name, version, distribution = "old-reverse", 1, "old-reverse-plugin"

        def for_writing(self):  # type: ignore[no-untyped-def]
            raise AssertionError("never called")

        def for_reading(self, params):  # type: ignore[no-untyped-def]
            raise AssertionError("never called")

    class Plugin:
        @hookimpl
        def offload_core_register_transforms(self, register):  # type: ignore[no-untyped-def]
            register(OldReverse())

    manager = PluginManager(load_entry_points=False)
    manager.register(Plugin())
    with pytest.raises(PluginLoadError, match="'old-reverse'.*for_writing without object_id.*upgrade it"):
        manager.transform("old-reverse")
