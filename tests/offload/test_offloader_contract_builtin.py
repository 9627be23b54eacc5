"""The blob-store (PIP-17) offloader keeps the offloader contract, on the
memory and filesystem stores, opened through the plugin registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import PluginManager, StorageDriver
from offload_core.memory import MemoryDriver
from offload_core.testing import OffloaderContract
from offload_core.testing.offloader_contract import MakeOffloader


class TestBlobStoreOffloader(OffloaderContract):
    @pytest.fixture(params=["memory", "filesystem"])
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> StorageDriver:
        return MemoryDriver() if request.param == "memory" else FilesystemDriver(str(tmp_path / "bucket"))

    @pytest.fixture
    def make_offloader(self) -> MakeOffloader:
        spec = PluginManager(load_entry_points=False).offloader_for_driver("memory")
        assert spec.name == "blobstore"
        return lambda driver: spec.factory(driver, max_block_size=4096, read_buffer_size=1024)  # type: ignore[no-any-return]
