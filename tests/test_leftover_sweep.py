"""The files a killed ``offload kafka copy`` or ``offload keys rotate``
leaves in a filesystem store: a real process is SIGKILLed at a chosen
write, and its leftovers are removed by the command's re-run and by
``offload ledgers sweep`` (its run has provably ended), while the data
stays whole."""

from __future__ import annotations

import base64
import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import PluginManager
from offload_core.transforming_driver import CHAIN_KEY
from tests.rsm.segments import numbered_segments, write_partition

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")

# Runs an `offload` command, SIGKILLed by the filesystem driver's rename
# whose source or target ends with the given suffix (the first one).
KILLED_AT_RENAME = textwrap.dedent(
    """
    import os, signal, sys
    from offload_driver_filesystem import FilesystemDriver
    from offload_core.cli import main

    side, suffix, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    rename = FilesystemDriver._rename

    def killed_at(self, src, dst):
        if (src if side == "src" else dst).endswith(suffix):
            os.kill(os.getpid(), signal.SIGKILL)
        rename(self, src, dst)

    FilesystemDriver._rename = killed_at
    main(args)
    """
)


def killed(side: str, suffix: str, *args: str) -> None:
    child = subprocess.run([sys.executable, "-c", KILLED_AT_RENAME, side, suffix, *args], capture_output=True,
                           text=True)  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stdout + child.stderr


def offload(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True)


def leftovers(store: Path) -> list[str]:
    """Every file outside the objects and their sidecars."""
    tmp = store / ".offload-tmp"
    pending = sorted(str(path.relative_to(store)) for path in (store / ".offload-meta").rglob("*.pending"))
    return sorted(str(path.relative_to(store)) for path in tmp.iterdir()) + pending if tmp.exists() else pending


# Killed as the commit record is to be renamed into place (the upload and
# the record's temporary file are left), or as the upload is to be renamed
# onto the .log after it (the record and the upload it names: a committed
# write, which the sweep finishes).
KAFKA_KILLS = {"before-commit": ("src", ".pending"), "after-commit": ("dst", ".log")}


@pytest.mark.parametrize("sweeper", ["rerun", "sweep"])
@pytest.mark.parametrize("kill", list(KAFKA_KILLS))
def test_a_killed_kafka_copy_leaves_files_its_rerun_and_the_sweep_remove(
    tmp_path: Path, kill: str, sweeper: str
) -> None:
    partition = write_partition(tmp_path / "kafka", "orders-0", numbered_segments(3, batches=40))
    store = tmp_path / "store"
    side, suffix = KAFKA_KILLS[kill]
    killed(side, suffix, "kafka", "copy", str(partition), f"file://{store}")
    left = leftovers(store)
    if kill == "before-commit":
        assert [name for name in left if name.startswith(".offload-tmp/") and name.endswith(".pending")], left
    else:
        assert [name for name in left if name.startswith(".offload-meta/") and name.endswith(".log.pending")], left
    assert sum((store / name).stat().st_size for name in left) > 0

    if sweeper == "rerun":
        done = offload("kafka", "copy", str(partition), f"file://{store}")
        assert done.returncode == 0 and "copied 2 segment(s)" in done.stdout, done.stderr
        assert "leftover file(s) of killed writers" in done.stderr
    else:
        swept = offload("ledgers", "sweep", f"file://{store}")
        assert swept.returncode == 0, swept.stderr
    assert leftovers(store) == []
    if sweeper == "sweep":
        done = offload("kafka", "copy", str(partition), f"file://{store}")
        assert done.returncode == 0 and "copied 2 segment(s)" in done.stdout, done.stderr
    read = offload("kafka", "read", f"file://{store}", "orders-0", "--offset", "0", "--json")
    assert read.returncode == 0, read.stderr
    assert [json.loads(line)["offset"] for line in read.stdout.splitlines()] == list(range(400))
    assert leftovers(store) == []


KEY_1, KEY_2 = bytes(range(32)), bytes(range(1, 33))


def write_keyring(path: Path, active: str, **keys: bytes) -> None:
    path.write_text(json.dumps({"active": active, "keys": {k: base64.b64encode(v).decode() for k, v in keys.items()}}))


@pytest.mark.parametrize("sweeper", ["rerun", "sweep"])
def test_a_killed_keys_rotate_leaves_files_its_rerun_and_the_sweep_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sweeper: str
) -> None:
    ring = tmp_path / "keyring.json"
    write_keyring(ring, "k1", k1=KEY_1)
    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", f"file:{ring}")
    store = tmp_path / "bucket"
    writer = PluginManager().open_driver(f"file://{store}", transforms="zstd,aes-gcm")
    for n in range(3):
        writer.write(f"obj-{n}", [b"secret %d " % n * 500], metadata={"n": str(n)})
    writer.close()
    plain = FilesystemDriver(str(store))
    before = {n: plain.read(f"obj-{n}") for n in range(3)}
    write_keyring(ring, "k2", k1=KEY_1, k2=KEY_2)

    # Killed with the new sidecar written, before it replaces the old one.
    killed("src", ".meta", "keys", "rotate", f"file://{store}")
    left = leftovers(store)
    assert [name for name in left if name.endswith(".meta")], left

    if sweeper == "rerun":
        done = offload("keys", "rotate", f"file://{store}")
        assert done.returncode == 0 and "3 of 3 transformed object(s) re-wrapped" in done.stderr, done.stderr
        assert "leftover file(s) of killed writers" in done.stderr
        assert leftovers(store) == []
    else:
        swept = offload("ledgers", "sweep", f"file://{store}")
        assert swept.returncode == 0, swept.stderr
        assert leftovers(store) == []
        done = offload("keys", "rotate", f"file://{store}")
        assert done.returncode == 0 and "3 of 3 transformed object(s) re-wrapped" in done.stderr, done.stderr
    assert leftovers(store) == []
    assert {n: plain.read(f"obj-{n}") for n in range(3)} == before
    for n in range(3):
        assert json.loads(plain.stat(f"obj-{n}").metadata[CHAIN_KEY])[1]["params"]["key_id"] == "k2"
    write_keyring(ring, "k2", k2=KEY_2)
    reader = PluginManager().open_driver(f"file://{store}", transforms="auto")
    assert reader.read("obj-1") == b"secret 1 " * 500
