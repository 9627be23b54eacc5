"""What `offload --version` and `offload --help` import, and that the lazy
verb table lists every verb group with its own help. No timing: start-up
time is bench/bench_startup.py's to measure."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

import offload_core
from offload_core import rsm
from offload_core.cli import _VERBS, main

# Modules that take most of a start-up to import, or an SDK's: neither flag needs them.
HEAVY = (
    "offload_core.rsm",
    "offload_core.formats.kafka",
    "offload_core.transforming_driver",
    "offload_core.offload",
    "pyspark",
    "boto3",
    "s3fs",
    "gcsfs",
    "adlfs",
)

# Runs the command as `python -m offload_core.cli` does, then names what it imported.
PROBE = """
import runpy, sys
sys.argv = ["offload", *sys.argv[1:]]
try:
    runpy.run_module("offload_core.cli", run_name="__main__")
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
print("\\n".join(sorted(sys.modules)), file=sys.stderr)
"""


def imported_by(*args: str) -> tuple[str, set[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True, timeout=120)
    return done.stdout, set(done.stderr.split())


def heavy_among(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") or m.startswith(h + "_") for h in HEAVY))


@pytest.mark.parametrize("flag", ["--version", "-V", "--help"])
def test_version_and_help_import_no_verb_module(flag: str) -> None:
    output, modules = imported_by(flag)
    assert output.strip()
    assert heavy_among(modules) == []
    assert not any(m.startswith("offload_core.cli.") and m.endswith("_commands") for m in modules)


def test_version_prints_the_installed_version() -> None:
    output, _ = imported_by("--version")
    assert output == f"offload, version {offload_core.__version__}\n"


def test_help_lists_every_verb_group_with_its_help() -> None:
    output, _ = imported_by("--help")
    commands = output.split("Commands:\n", 1)[1]
    for name, verb in _VERBS.items():
        line = next(line for line in commands.splitlines() if line.split()[:1] == [name])
        shown = line.split(None, 1)[1].removesuffix("...")
        assert verb.short_help.startswith(shown)


@pytest.mark.parametrize("name", sorted(_VERBS))
def test_lazy_table_matches_each_groups_own_help(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    assert command.name == name
    assert _VERBS[name].short_help == command.get_short_help_str(limit=1000)


def test_topics_still_has_the_policy_verbs() -> None:
    topics = main.get_command(click.Context(main), "topics")
    assert isinstance(topics, click.Group)
    assert {"list", "produce", "set-offload-threshold"} <= set(topics.commands)


def test_package_import_leaves_heavy_modules_unloaded() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, offload_core; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert heavy_among(set(done.stdout.split())) == []


def test_loading_the_plugins_imports_neither_the_mapfile_offloader_nor_ssl() -> None:
    # What every command does at its start (to report plugins that fail to import); the
    # offloaders a plugin registers load when the registries are first built.
    script = (
        "import sys; from offload_core.plugins import default_plugin_manager; default_plugin_manager().failed(); "
        "print('\\n'.join(sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    loaded = set(done.stdout.split())
    assert "offload_core.offload.mapfile.mapfile_plugin" in loaded
    unwanted = {"offload_core.offload.mapfile.mapfile_offloader", "offload_core.offload.mapfile.mapfile_stored", "ssl"}
    assert sorted(loaded & unwanted) == []


@pytest.mark.parametrize("name", offload_core.__all__)
def test_every_public_name_imports(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from offload_core import {name}", namespace)
    assert namespace[name] is getattr(offload_core, name)


def test_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        offload_core.no_such_name  # noqa: B018 - the lookup is what is tested


@pytest.mark.parametrize("name", rsm.__all__)
def test_every_rsm_name_imports(name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from offload_core.rsm import {name}", namespace)
    assert namespace[name] is getattr(rsm, name)
    assert getattr(namespace[name], "__module__", "").startswith("offload_core.rsm.")


def test_rsm_submodules_still_import_by_from_and_unknown_names_do_not() -> None:
    namespace: dict[str, object] = {}
    exec("from offload_core.rsm import copy_lease", namespace)
    assert namespace["copy_lease"] is sys.modules["offload_core.rsm.copy_lease"]
    with pytest.raises(AttributeError, match="no_such_name"):
        rsm.no_such_name  # noqa: B018 - the lookup is what is tested


def test_dir_of_rsm_lists_its_public_names_before_they_load() -> None:
    # A fresh interpreter: in this one other tests may have loaded them already.
    script = "import offload_core.rsm as rsm; print(sorted(set(rsm.__all__) - set(dir(rsm))))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"


def test_an_rsm_submodule_loads_without_the_managers() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, offload_core.rsm.types; print('\\n'.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded = set(done.stdout.split())
    assert "offload_core.rsm.types" in loaded
    assert not loaded & {"offload_core.rsm.metadata_manager", "offload_core.rsm.storage_manager"}


# What no verb's start needs: each storage SDK and fsspec load with the first store a verb opens,
# prometheus_client with the first metric (installed plugins register by path, or import them late).
NOT_AT_START = ("fsspec", "boto3", "s3fs", "gcsfs", "adlfs", "azure", "prometheus_client", "pyspark")


@pytest.mark.parametrize("verb", sorted(_VERBS))
def test_a_verb_starts_without_a_store_sdk_or_metrics_library(verb: str) -> None:
    _, modules = imported_by(verb, "--help")
    loaded = sorted(m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_AT_START))
    assert loaded == [], f"offload {verb} --help imported {loaded}"


# What no verb group needs to parse its arguments or print its help: each loads when a verb runs
# (Spark and what it reads with, Iceberg, the Kafka record formats, the RSM's managers and
# readers, Aiven's layout and its crypto).
NOT_TO_PARSE = (
    "pyspark",
    "pyarrow",
    "pyiceberg",
    "Cryptodome",
    "offload_core.spark",
    "offload_core.formats.kafka",
    "offload_core.rsm.metadata_manager",
    "offload_core.rsm.storage_manager",
    "offload_core.rsm.log_reader",
    "offload_core.rsm.aiven",
)


@pytest.mark.parametrize("verb", sorted(_VERBS))
def test_a_verb_group_parses_without_spark_kafka_formats_or_the_rsm(verb: str) -> None:
    _, modules = imported_by(verb, "--help")
    loaded = sorted(m for m in modules if any(m == name or m.startswith(name + ".") for name in NOT_TO_PARSE))
    assert loaded == [], f"offload {verb} --help imported {loaded}"


# The embedded broker, its config and its policies load when a verb opens the broker (the topics and
# namespaces verbs), never to parse a verb's arguments.
@pytest.mark.parametrize("verb", sorted(_VERBS))
def test_a_verb_group_parses_without_the_broker(verb: str) -> None:
    _, modules = imported_by(verb, "--help")
    assert not [m for m in modules if m.startswith("offload_core.managed_ledger")], verb


def test_the_readme_row_of_the_drivers_names_only_commands_that_show_them() -> None:
    """A command the README's storage-driver row names without arguments
    lists the installed drivers (`offload --version` only prints the version)."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| storage drivers"))
    spans = re.findall(r"`(offload [^`]*)`", row)
    commands = [span.split()[1:] for span in spans if not any(word.isupper() for word in span.split())]  # no URL
    assert commands
    for args in commands:
        output, _ = imported_by(*args)
        assert "filesystem" in output and "s3" in output, args
