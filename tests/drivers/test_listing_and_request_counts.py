"""Listings stream page by page on the cloud drivers, and every request a
driver sends is counted: each retry attempt, each listing page."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from offload_core import StorageDriver, TransientStorageError
from offload_core.instrument import InstrumentedDriver
from offload_core.memory import MemoryDriver
from tests.drivers.test_one_retry_layer import DRIVERS, DroppingServer
from tests.emulators import Azurite, GcsEmulator, MotoS3

PAGE = 10


def s3_store(request: pytest.FixtureRequest) -> StorageDriver:
    from offload_driver_s3 import S3Driver

    moto: MotoS3 = request.getfixturevalue("s3")
    return S3Driver("offload-test", **{**moto.client_options(), "list_page_size": PAGE})


def gcs_store(request: pytest.FixtureRequest) -> StorageDriver:
    from offload_driver_gcs import GCSDriver

    gcs: GcsEmulator = request.getfixturevalue("gcs")
    return GCSDriver("offload-test", **{**gcs.client_options(), "keep_alive": False, "list_page_size": PAGE})


def azure_store(request: pytest.FixtureRequest) -> StorageDriver:
    from offload_driver_azure import AzureBlobDriver

    azurite: Azurite = request.getfixturevalue("azurite")
    return AzureBlobDriver(azurite.new_container(), connection_string=azurite.connection_string(),
                           list_page_size=PAGE)  # fmt: skip


STORES: dict[str, Callable[[pytest.FixtureRequest], StorageDriver]] = {
    "s3": s3_store,
    "gcs": gcs_store,
    "azure": azure_store,
}


@pytest.mark.emulator
@pytest.mark.parametrize("name", list(STORES))
def test_a_listing_larger_than_a_page_streams_in_order(name: str, request: pytest.FixtureRequest) -> None:
    store = STORES[name](request)
    keys = [f"ledgers/{n:03d}-{'index' if n % 2 else 'data'}" for n in range(25)] + ["other/x"]
    for key in reversed(keys):
        store.write(key, b"x")
    before = store.request_counts["list"]
    listing = store.list("ledgers/")
    first = next(listing)
    assert first.key == "ledgers/000-data"
    assert store.request_counts["list"] - before == 1  # lazily: one page so far
    rest = [info.key for info in listing]
    assert [first.key, *rest] == sorted(keys[:-1])
    if name == "gcs" and store.request_counts["list"] - before == 1:
        pytest.skip("gcp-storage-emulator ignores maxResults (one page for all); the driver sends it, GCS pages")
    assert store.request_counts["list"] - before == 3  # 25 objects, pages of 10


@pytest.mark.parametrize("name", list(DRIVERS))
def test_every_attempt_is_a_counted_request(name: str) -> None:
    server = DroppingServer()
    try:
        driver = InstrumentedDriver(DRIVERS[name](f"http://127.0.0.1:{server.port}"))
        driver.inner.retry = type(driver.inner.retry)(attempts=3, base_delay=0.01, max_delay=0.02)
        with pytest.raises(TransientStorageError):
            driver.read("k")
    finally:
        server.close()
    assert driver.counts.requests["read"] == 3


def test_a_driver_that_does_not_count_counts_one_request_per_call() -> None:
    store = InstrumentedDriver(MemoryDriver())
    store.write("a", [b"1", b"2"])
    store.read("a")
    store.stat("a")
    list(store.list(""))
    store.delete("a")
    assert dict(store.counts.requests) == {"write": 1, "read": 1, "stat": 1, "list": 1, "delete": 1}
