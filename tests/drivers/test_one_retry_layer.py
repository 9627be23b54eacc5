"""Our RetryPolicy is the only retry layer on every cloud driver.

Against a server that accepts connections and drops them, a request costs
``retry_attempts`` times what one attempt costs: no SDK retry loop stacks
under ours. So the worst-case time to an error is ``retry_attempts`` requests
(each bounded by the driver's timeouts) plus the policy's
``worst_case_wait()`` of backoff, on every driver. No test here reads a
clock.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

import pytest

from offload_core import StorageDriver, TransientStorageError

ATTEMPTS = 3
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class DroppingServer:
    """Accepts TCP connections on 127.0.0.1, reads a little, closes them,
    and counts them."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        self.listener.settimeout(0.2)
        while not self._stop:
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            with connection:
                connection.settimeout(1)
                with contextlib.suppress(OSError):
                    connection.recv(65536)

    def close(self) -> None:
        self._stop = True
        self._thread.join(timeout=5)
        self.listener.close()


def s3(endpoint: str) -> StorageDriver:
    from offload_driver_s3 import S3Driver

    return S3Driver("bucket", endpoint=endpoint, access_key_id="k", secret_access_key="s", retry_attempts=ATTEMPTS)


def gcs(endpoint: str) -> StorageDriver:
    from offload_driver_gcs import GCSDriver

    return GCSDriver("bucket", endpoint=endpoint, token="anon", retry_attempts=ATTEMPTS, keep_alive=False)


def azure(endpoint: str) -> StorageDriver:
    from offload_driver_azure import AzureBlobDriver

    connection = (
        f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};"
        f"BlobEndpoint={endpoint}/devstoreaccount1;"
    )
    return AzureBlobDriver("container", connection_string=connection, retry_attempts=ATTEMPTS)


DRIVERS: dict[str, Callable[[str], StorageDriver]] = {"s3": s3, "gcs": gcs, "azure": azure}


def connections_for_one_read(name: str, attempts: int) -> int:
    server = DroppingServer()
    try:
        driver = DRIVERS[name](f"http://127.0.0.1:{server.port}")
        driver.retry = type(driver.retry)(attempts=attempts, base_delay=0.01, max_delay=0.02)
        with pytest.raises(TransientStorageError) as caught:
            driver.read("some/key")
        assert f"gave up after {attempts} attempts" in caught.value.__notes__[-1]
    finally:
        server.close()
    return server.connections


@pytest.mark.parametrize("name", list(DRIVERS))
def test_a_dropped_request_costs_our_attempts_and_nothing_stacked(name: str) -> None:
    per_attempt = connections_for_one_read(name, 1)
    # One request; aiohttp (under s3fs and gcsfs) resends an idempotent request
    # once, at once, when a fresh connection drops before any response (RFC
    # 9112 section 9.3.1.1). An SDK retry loop would show as more.
    assert per_attempt in (1, 2)
    assert connections_for_one_read(name, ATTEMPTS) == ATTEMPTS * per_attempt


@pytest.mark.parametrize("name", list(DRIVERS))
def test_a_refused_port_is_a_transient_error_after_our_attempts(name: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    driver = DRIVERS[name](f"http://127.0.0.1:{port}")
    driver.retry = type(driver.retry)(attempts=ATTEMPTS, base_delay=0.01, max_delay=0.02)
    with pytest.raises(TransientStorageError) as caught:
        driver.stat("some/key")
    assert f"gave up after {ATTEMPTS} attempts" in caught.value.__notes__[-1]


def test_worst_case_wait_is_bounded_by_the_policy() -> None:
    from offload_core.retry import RetryPolicy

    assert RetryPolicy(attempts=1).worst_case_wait() == 0
    assert RetryPolicy(attempts=4, base_delay=0.5, max_delay=1.5).worst_case_wait() == 0.5 + 1.0 + 1.5
