"""The driver contract on the drivers that ship with the project."""

from __future__ import annotations

from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core.memory import MemoryDriver
from offload_core.storage import StorageDriver
from offload_core.testing import DriverContract


class TestMemoryDriver(DriverContract):
    @pytest.fixture
    def driver(self) -> StorageDriver:
        return MemoryDriver()


class TestFilesystemDriver(DriverContract):
    large_part_size = 2**20

    @pytest.fixture
    def driver(self, tmp_path: Path) -> StorageDriver:
        return FilesystemDriver(str(tmp_path / "bucket"))
