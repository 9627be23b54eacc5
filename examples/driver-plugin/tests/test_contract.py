"""The offload-core driver contract, run against this plugin as installed."""

from pathlib import Path

import pytest

from offload_core import StorageDriver, open_driver
from offload_core.testing import DriverContract


class TestSqliteDriver(DriverContract):
    replace_metadata_unsupported = "the example driver keeps to the required operations"
    large_part_size = 2**20

    @pytest.fixture
    def driver(self, tmp_path: Path) -> StorageDriver:
        # Opened the way a user would: by URL, through the installed entry point.
        return open_driver(f"sqlite://{tmp_path / 'bucket.db'}")
