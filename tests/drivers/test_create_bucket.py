"""``offload drivers check --create`` creates the bucket (S3, GCS) or the
container (Azure) a quick start names, against the real servers the tests
use; a missing one without it says to add --create; and an Azurite started
without --skipApiVersionCheck is one line naming that flag, not the SDK's
exception."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest

from tests.emulators import Azurite, GcsEmulator, MotoS3

pytestmark = pytest.mark.emulator


def offload(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})  # fmt: skip


def check_creates(url: str, *options: str, env: dict[str, str] | None = None) -> None:
    missing = offload("drivers", "check", url, *options, env=env)
    assert missing.returncode == 1 and "--create" in missing.stdout, missing.stdout + missing.stderr
    created = offload("drivers", "check", url, "--create", *options, env=env)
    assert created.returncode == 0, created.stdout + created.stderr
    assert "create bucket" in created.stdout and "created" in created.stdout and "all checks passed" in created.stdout
    again = offload("drivers", "check", url, "--create", *options, env=env)
    assert again.returncode == 0 and "already there" in again.stdout, again.stdout + again.stderr


def test_s3_on_moto(s3: MotoS3) -> None:
    credentials = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    check_creates(f"s3://new-{uuid.uuid4().hex[:8]}", "-o", f"endpoint={s3.endpoint}", "-o", "region=us-east-1",
                  env=credentials)  # fmt: skip


def test_gcs_on_its_emulator(gcs: GcsEmulator) -> None:
    check_creates(f"gs://new-{uuid.uuid4().hex[:8]}", "-o", f"endpoint={gcs.endpoint}", "-o", "token=anon",
                  env={"GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"})  # fmt: skip


def test_azure_on_azurite(azurite: Azurite) -> None:
    check_creates(
        f"az://new-{uuid.uuid4().hex[:8]}", env={"AZURE_STORAGE_CONNECTION_STRING": azurite.connection_string()}
    )


def test_the_filesystem_root_is_there_once_opened(tmp_path: object) -> None:
    done = offload("drivers", "check", f"file://{tmp_path}/new-root", "--create")
    assert done.returncode == 0 and "already there" in done.stdout, done.stdout + done.stderr


@pytest.fixture
def strict_azurite() -> Iterator[Azurite]:
    server = Azurite.start(skip_api_version_check=False)
    yield server
    server.stop()


def test_an_azurite_refusing_the_sdk_version_is_one_line_naming_the_flag(strict_azurite: Azurite) -> None:
    env = {"AZURE_STORAGE_CONNECTION_STRING": strict_azurite.connection_string()}
    for verb in (["ledgers", "ls", "az://container"], ["drivers", "check", "az://container", "--create"]):
        done = offload(*verb, env=env)
        assert done.returncode == 1 and "Traceback" not in done.stderr
        shown = done.stderr + done.stdout
        assert "--skipApiVersionCheck" in shown, shown
        assert "x-ms-" not in shown.lower() and "RequestId" not in shown, shown
