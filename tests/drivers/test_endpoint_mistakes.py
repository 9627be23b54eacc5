"""Endpoint mistakes a newcomer makes are one-line ConfigErrors that say
what is wrong, never tracebacks or "failed transiently"."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from offload_core import ConfigError, StorageDriver
from tests.drivers.test_one_retry_layer import AZURITE_KEY
from tests.emulators import Azurite, MotoS3

UNRESOLVABLE = "http://no-such-host.invalid:9000"


def s3_at(endpoint: str) -> StorageDriver:
    from offload_driver_s3 import S3Driver

    return S3Driver("bucket", endpoint=endpoint, access_key_id="k", secret_access_key="s", retry_attempts=2)


def gcs_at(endpoint: str) -> StorageDriver:
    from offload_driver_gcs import GCSDriver

    return GCSDriver("bucket", endpoint=endpoint, token="anon", retry_attempts=2)


def azure_at(endpoint: str) -> StorageDriver:
    from offload_driver_azure import AzureBlobDriver

    connection = (f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};"
                  f"BlobEndpoint={endpoint};")  # fmt: skip
    return AzureBlobDriver("container", connection_string=connection, retry_attempts=2)


@pytest.mark.parametrize("make", [s3_at, gcs_at, azure_at], ids=["s3", "gcs", "azure"])
def test_a_host_that_does_not_resolve_is_a_config_error(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError, match="does not resolve"):
        make(UNRESOLVABLE).stat("key")


@pytest.mark.emulator
def test_https_against_a_plain_http_server_says_so(s3: MotoS3) -> None:
    with pytest.raises(ConfigError, match="TLS handshake .* is the endpoint plain http"):
        s3_at(s3.endpoint.replace("http://", "https://")).stat("key")


@pytest.fixture
def not_s3() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    server.RequestHandlerClass.log_message = lambda *args: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_listing_answered_404_names_the_bucket_or_endpoint(not_s3: str) -> None:
    with pytest.raises(ConfigError, match="answered 404: the bucket does not exist or the endpoint is not an S3"):
        list(s3_at(not_s3).list(""))


@pytest.mark.emulator
def test_an_azurite_endpoint_without_the_account_says_where_it_belongs(azurite: Azurite) -> None:
    bare = azurite.endpoint.rsplit("/", 1)[0]  # http://127.0.0.1:PORT, without /devstoreaccount1
    driver = azure_at(bare)
    with pytest.raises(ConfigError, match=r"Azurite: http://host:port/<account>"):
        driver.write("key", b"value")
