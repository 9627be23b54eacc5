"""The driver contract on the drivers that ship with the project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core.fsspec_driver import FsspecDriver
from offload_core.memory import MemoryDriver
from offload_core.storage import StorageDriver
from offload_core.testing import DriverContract


class TestMemoryDriver(DriverContract):
    @pytest.fixture
    def driver(self) -> StorageDriver:
        return MemoryDriver()


class TestFilesystemDriver(DriverContract):
    large_part_size = 2**20
    tells_live_writers = True

    @pytest.fixture
    def driver(self, tmp_path: Path) -> StorageDriver:
        return FilesystemDriver(str(tmp_path / "bucket"))


class TestFsspecDriverOnFsspecMemory(DriverContract):
    """The generic sidecar-metadata path on a filesystem that is not local disk."""

    large_part_size = 2**20

    @pytest.fixture
    def driver(self) -> Iterator[StorageDriver]:
        fs = fsspec.filesystem("memory")
        # fsspec's memory filesystem is one dict per process: start and end empty.
        fs.store.clear()
        fs.pseudo_dirs.clear()
        fs.pseudo_dirs.append("")
        yield FsspecDriver(fs, "/bucket")
        fs.store.clear()
        fs.pseudo_dirs.clear()
        fs.pseudo_dirs.append("")
