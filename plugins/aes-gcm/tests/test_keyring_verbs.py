"""``offload keys add / list / retire`` keep a keyring file; with the
keyring gone, a read names the key id the object needs; and the keyring
module runs with ``python -m`` without runpy's warning."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from offload_plugin_aes_gcm import AesGcmTransform, FileKeyring, KeyringError

from offload_core.cli import main
from offload_core.memory import MemoryDriver
from offload_core.plugins import PluginManager
from offload_core.transforming_driver import TransformingDriver


def keys(*args: str) -> Result:
    return CliRunner().invoke(main, ["keys", *args])


def test_add_list_retire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ring = tmp_path / "keyring.json"
    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", f"file:{ring}")
    created = keys("add")
    assert created.exit_code == 0 and "with key k1, active" in created.output, created.output
    assert stat.S_IMODE(os.stat(ring).st_mode) == 0o600
    assert keys("add").exit_code == 0  # k2, not active
    assert keys("add", "spare", "--keyring", str(ring)).exit_code == 0
    assert FileKeyring.load(ring).active_key_id() == "k1"
    activated = keys("add", "--activate")
    assert activated.exit_code == 0 and "key k3" in activated.output and ", active" in activated.output
    assert FileKeyring.load(ring).active_key_id() == "k3"

    listed = keys("list", "--json")
    assert json.loads(listed.output) == {"keyring": str(ring), "active": "k3", "keys": ["k1", "k2", "k3", "spare"]}
    text = keys("list").output.splitlines()
    assert text[0].split() == ["KEY", "ID", "ACTIVE"] and text[3].split() == ["k3", "yes"]
    assert all(body not in keys("list").output for body in json.loads(ring.read_text())["keys"].values())

    refused = keys("retire", "k3")
    assert refused.exit_code == 1 and "'k3' is the active key" in refused.output
    assert keys("add", "k1").exit_code == 1 and "already in" in keys("add", "k1").output
    dry = keys("retire", "k1")
    assert dry.exit_code == 0 and dry.stdout == f"would retire key k1 from {ring}\n", dry.output
    assert "no store named, so none checked" in dry.stderr and "become unreadable" in dry.stderr
    assert dry.stderr.splitlines()[-1].startswith("dry run: nothing deleted; add --execute")
    assert "k1" in json.loads(keys("list", "--json").output)["keys"]
    retired = keys("retire", "k1", "--execute")
    assert retired.exit_code == 0, retired.output
    assert json.loads(keys("list", "--json").output)["keys"] == ["k2", "k3", "spare"]
    missing = keys("retire", "k1", "--execute")
    assert missing.exit_code == 1 and "'k1' is not in" in missing.output and "Traceback" not in missing.output


def test_no_keyring_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OFFLOAD_AES_GCM_KEYRING", raising=False)
    done = keys("list")
    assert done.exit_code == 1 and "--keyring PATH or OFFLOAD_AES_GCM_KEYRING" in done.output
    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", "kms:projects/x")
    done = keys("add")
    assert done.exit_code == 1 and "is not a keyring file" in done.output


def test_a_keyring_gone_is_named_with_the_key_id_the_object_needs(tmp_path: Path) -> None:
    ring = tmp_path / "keyring.json"
    assert keys("add", "k7", "--keyring", str(ring)).exit_code == 0
    inner = MemoryDriver()

    def opened() -> TransformingDriver:
        aes = AesGcmTransform(lambda: FileKeyring.load(ring))
        return TransformingDriver(inner, lambda name, distribution=None: aes, [aes])

    opened().write("obj", [b"secret"], metadata={})
    assert opened().read("obj") == b"secret"
    ring.unlink()
    with pytest.raises(KeyringError, match=r"wrapped under key id 'k7'.*keyring file .* cannot be read"):
        opened().read("obj")


def test_the_keyring_module_runs_without_a_warning(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "offload_plugin_aes_gcm.keyring", "new", str(tmp_path / "ring.json")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert FileKeyring.load(tmp_path / "ring.json").active_key_id() == "k1"


def test_with_the_keyring_gone_tiered_storage_first_reads_the_hot_copy(tmp_path: Path) -> None:
    ring, config = tmp_path / "keyring.json", tmp_path / "sealed.toml"
    config.write_text('managedLedgerOffloadTransforms = "zstd,aes-gcm"\n')
    env = {**os.environ, "OFFLOAD_AES_GCM_KEYRING": f"file:{ring}"}

    def offload(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "offload_core.cli", *args]
        if args[0] == "topics":
            command += ["--data-dir", str(tmp_path / "data"), "--config", str(config)]
        return subprocess.run(command, capture_output=True, text=True, env=env)

    for args in (("keys", "add"), ("topics", "produce", "acme/sealed/orders", "--count", "50", "--size", "64"),
                 ("topics", "offload", "acme/sealed/orders")):  # fmt: skip
        done = offload(*args)
        assert done.returncode == 0, done.stderr
    ring.unlink()

    read = offload("topics", "consume", "acme/sealed/orders", "--from", "1:0", "--count", "50", "--json")
    assert read.returncode == 0, read.stderr
    assert len(read.stdout.splitlines()) == 50
    assert "key id 'k1'" in read.stderr  # the fallback is logged, naming the key the objects need
    only = offload("topics", "consume", "acme/sealed/orders", "--from", "1:0", "--count", "1",
                   "--priority", "offloaded-only")  # fmt: skip
    assert only.returncode == 1 and "key id 'k1'" in only.stderr and "Traceback" not in only.stderr


def test_a_rewritten_keyring_keeps_its_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ring = tmp_path / "keyring.json"
    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", f"file:{ring}")
    assert keys("add").exit_code == 0
    ring.chmod(0o640)  # shared with the broker's group
    assert keys("add").exit_code == 0
    assert stat.S_IMODE(os.stat(ring).st_mode) == 0o640
    assert keys("retire", "k2", "--execute").exit_code == 0
    assert stat.S_IMODE(os.stat(ring).st_mode) == 0o640


def test_retire_refuses_a_key_objects_in_a_named_store_still_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ring = tmp_path / "keyring.json"
    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", f"file:{ring}")
    url = f"file://{tmp_path / 'bucket'}"
    assert keys("add").exit_code == 0
    writer = PluginManager().open_driver(url, transforms="aes-gcm")
    for name in ("a", "b"):
        writer.write(name, [b"secret"], metadata={})
    assert keys("add", "--activate").exit_code == 0
    for extra in ((), ("--execute",)):
        refused = keys("retire", "k1", url, *extra)
        assert refused.exit_code == 1, refused.output
        assert f"2 object(s) under {url} still have data keys wrapped under key 'k1' (first: a)" in refused.output
        assert "run `offload keys rotate" in refused.output
    assert "k1" in json.loads(keys("list", "--json").output)["keys"]
    assert keys("rotate", url).exit_code == 0
    retired = keys("retire", "k1", url, "--execute")
    assert retired.exit_code == 0 and f"no object under {url} uses key k1" in retired.stderr, retired.output
    assert json.loads(keys("list", "--json").output)["keys"] == ["k2"]
    assert PluginManager().open_driver(url, transforms="auto").read("b") == b"secret"
