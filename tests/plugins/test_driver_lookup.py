"""Opening drivers by URL, name and alias, registering them, and the
errors of each (what to install, option typos, bad registrations)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import ConfigError, DriverNotInstalledError, PluginLoadError, PluginManager, open_driver
from offload_core.memory import MemoryDriver
from offload_core.plugins import ENV_DISABLE_AUTOLOAD
from tests.plugins.fake_plugins import with_drivers


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

    probe = (
        "import sys\nfrom offload_core import PluginManager\n"
        "names = {spec.name for spec in PluginManager().drivers()}\n"
        "assert {'s3', 'gcs', 'azure', 'hdfs'} <= names, names\n"
        "loaded = [m for m in ('s3fs', 'gcsfs', 'azure.storage.blob', 'pyarrow.fs') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


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
