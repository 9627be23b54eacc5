"""The HDFS driver. No NameNode runs on CI machines: the contract runs when
OFFLOAD_TEST_HDFS_URL names a WebHDFS endpoint, and is reported as not run
(with this reason) otherwise."""

from __future__ import annotations

import os
import uuid

import pytest
from offload_driver_hdfs import HdfsDriver

from offload_core import ConfigError, StorageDriver, open_driver
from offload_core.testing import DriverContract

HDFS_URL = os.environ.get("OFFLOAD_TEST_HDFS_URL")
NOT_RUN = "HDFS contract not run: set OFFLOAD_TEST_HDFS_URL=hdfs://namenode:9870/tmp/offload-test (no NameNode here)"


@pytest.mark.emulator
@pytest.mark.skipif(HDFS_URL is None, reason=NOT_RUN)
class TestHdfsContract(DriverContract):
    state_machine_examples = 10
    large_part_size = 2**20

    @pytest.fixture
    def driver(self) -> StorageDriver:
        assert HDFS_URL is not None
        return open_driver(f"{HDFS_URL.rstrip('/')}/{uuid.uuid4().hex}")


def test_url_parsing_and_registration() -> None:
    driver = open_driver("hdfs://namenode.example:9871/offload/bucket", user="pulsar")
    assert isinstance(driver, HdfsDriver)
    assert (driver.host, driver.port, driver.root) == ("namenode.example", 9871, "/offload/bucket")
    assert isinstance(open_driver("webhdfs", host="nn", root="/x"), HdfsDriver)


def test_bad_configuration() -> None:
    with pytest.raises(ConfigError, match="HDFS URLs look like"):
        HdfsDriver.from_url("hdfs:///no-host")
    with pytest.raises(ConfigError, match="absolute path"):
        HdfsDriver("nn", "relative/path")
    with pytest.raises(ConfigError, match="NameNode host"):
        HdfsDriver("", "/x")
