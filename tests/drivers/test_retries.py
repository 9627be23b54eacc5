"""Transient failures are retried, boundedly, on each real backend.

The fault is injected below the driver, as the backend's own transient error
(S3 SlowDown, GCS HTTP 503, Azure connection reset); everything else talks
to the real server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from azure.core.exceptions import ServiceResponseError
from botocore.exceptions import ClientError
from gcsfs.retry import HttpError
from offload_driver_azure import AzureBlobDriver
from offload_driver_gcs import GCSDriver
from offload_driver_s3 import S3Driver

from offload_core import StorageDriver, TransientStorageError
from offload_core.retry import RetryPolicy
from tests.emulators import Azurite, GcsEmulator, MotoS3

pytestmark = pytest.mark.emulator


def s3_slowdown() -> Exception:
    cause = ClientError({"Error": {"Code": "SlowDown"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "GetObject")
    error = OSError("Please reduce your request rate")
    error.__cause__ = cause
    return error


def flaky(real: Callable[..., Any], failures: int, make_error: Callable[[], Exception], calls: list[int]) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) <= failures:
            raise make_error()
        return real(*args, **kwargs)

    return wrapper


def s3_driver(s3: MotoS3) -> tuple[StorageDriver, Callable[[int, list[int]], None]]:
    driver = S3Driver("offload-test", **s3.client_options())  # type: ignore[arg-type]

    def inject(failures: int, calls: list[int]) -> None:
        driver.fs.cat_file = flaky(driver.fs.cat_file, failures, s3_slowdown, calls)

    return driver, inject


def gcs_driver(gcs: GcsEmulator) -> tuple[StorageDriver, Callable[[int, list[int]], None]]:
    driver = GCSDriver("offload-test", **gcs.client_options(), keep_alive=False)  # type: ignore[arg-type]

    def inject(failures: int, calls: list[int]) -> None:
        error = lambda: HttpError({"code": 503, "message": "backend unavailable"})  # noqa: E731
        driver.fs.cat_file = flaky(driver.fs.cat_file, failures, error, calls)

    return driver, inject


def azure_driver(azurite: Azurite) -> tuple[StorageDriver, Callable[[int, list[int]], None]]:
    driver = AzureBlobDriver(azurite.new_container(), connection_string=azurite.connection_string())

    def inject(failures: int, calls: list[int]) -> None:
        real_blob = driver._blob

        def blob(key: str) -> Any:
            client = real_blob(key)
            client.download_blob = flaky(client.download_blob, failures, lambda: ServiceResponseError("reset"), calls)
            return client

        driver._blob = blob  # type: ignore[method-assign]

    return driver, inject


@pytest.fixture(params=["s3", "gcs", "azure"])
def backend(request: pytest.FixtureRequest) -> tuple[StorageDriver, Callable[[int, list[int]], None]]:
    if request.param == "s3":
        s3 = request.getfixturevalue("s3")
        return s3_driver(s3)
    if request.param == "gcs":
        return gcs_driver(request.getfixturevalue("gcs"))
    return azure_driver(request.getfixturevalue("azurite"))


def test_transient_errors_are_retried_then_succeed(backend: Any) -> None:
    driver, inject = backend
    driver.retry = RetryPolicy(attempts=4, base_delay=0.01, max_delay=0.05)
    driver.write("obj", b"payload")
    calls: list[int] = []
    inject(2, calls)
    assert driver.read("obj", 0, 3) == b"pay"
    assert len(calls) == 3


def test_retries_are_bounded(backend: Any) -> None:
    driver, inject = backend
    driver.retry = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05)
    driver.write("obj", b"payload")
    calls: list[int] = []
    inject(10**6, calls)
    with pytest.raises(TransientStorageError) as caught:
        driver.read("obj", 0, 3)
    assert len(calls) == 3
    assert "gave up after 3 attempts" in caught.value.__notes__[0]
