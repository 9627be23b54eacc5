"""A store per test: the filesystem driver, and S3 through moto's server;
and a remote log metadata manager in the test's directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from offload_core.plugins import open_driver
from offload_core.rsm import RemoteLogMetadataManager
from offload_core.storage import StorageDriver
from tests.emulators import MotoS3


@pytest.fixture(params=["filesystem", pytest.param("s3", marks=pytest.mark.emulator)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StorageDriver]:
    if request.param == "filesystem":
        driver = open_driver(f"file://{tmp_path / 'store'}")
    else:
        s3: MotoS3 = request.getfixturevalue("s3")
        driver = open_driver("s3://offload-test", **s3.client_options())
    with driver:
        yield driver


@pytest.fixture
def rlmm(tmp_path: Path) -> RemoteLogMetadataManager:
    with RemoteLogMetadataManager(tmp_path / "rlmm.sqlite") as manager:
        yield manager  # type: ignore[misc]
