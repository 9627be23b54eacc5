"""Secrets given in URLs, endpoints or tokens never reach a message or a repr."""

from __future__ import annotations

import subprocess
import sys
import traceback

import pytest

from offload_core import ConfigError, open_driver
from offload_core.errors import mask_secrets
from offload_core.urls import check_endpoint, redact_url, redact_url_text

SECRET = "Zq8SECRETzq8"


@pytest.mark.parametrize(
    "url",
    [
        f"s3a://AKIAKEY:{SECRET}@bucket/prefix",
        f"s3://bucket/prefix?X-Amz-Signature={SECRET}",
        f"az://container/prefix?sv=2024-01-01&sig={SECRET}",
        f"gs://bucket/p#{SECRET}",
        f"abfs://user:{SECRET}@container/p",
    ],
)
def test_secrets_in_store_urls_are_never_quoted(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_driver(url)
    text = "".join(traceback.format_exception(caught.value))
    assert SECRET not in text
    assert "never in the URL" in str(caught.value)


def test_an_endpoint_with_userinfo_is_redacted_in_repr() -> None:
    from offload_driver_s3 import S3Driver

    driver = S3Driver("bucket", endpoint=f"http://user:{SECRET}@127.0.0.1:9000", access_key_id="k",
                      secret_access_key=SECRET)  # fmt: skip
    assert SECRET not in repr(driver)
    assert "127.0.0.1:9000" in repr(driver)


def test_a_gcs_token_string_never_appears_in_the_error() -> None:
    from offload_driver_gcs import GCSDriver

    with pytest.raises(ConfigError) as caught:
        GCSDriver("some-bucket", token=f"ya29.{SECRET}")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert SECRET not in "".join(traceback.format_exception(caught.value))


def test_azure_connection_strings_the_sdk_rejects_are_config_errors() -> None:
    from offload_driver_azure import AzureBlobDriver

    with pytest.raises(ConfigError, match="connection_string") as caught:
        AzureBlobDriver("container", connection_string=f"AccountKey={SECRET};garbage")
    assert SECRET not in "".join(traceback.format_exception(caught.value))


@pytest.mark.parametrize("endpoint", ["127.0.0.1:5123", "not a url", "ftp://host", "http://", "http://a b"])
def test_bad_endpoints_are_one_line_config_errors(endpoint: str) -> None:
    with pytest.raises(ConfigError, match="must start with http:// or https://"):
        check_endpoint(endpoint)


def test_redaction_helpers() -> None:
    assert redact_url(f"s3a://KEY:{SECRET}@bucket/p?x=1") == "s3a://***@bucket/p?***"
    assert redact_url("file:///data/bucket") == "file:///data/bucket"
    assert redact_url("plain") == "plain"
    assert SECRET not in redact_url_text(f"failed at http://u:{SECRET}@h:1/x?sig={SECRET} (retry)")
    masked = mask_secrets(
        {"endpoint": f"http://u:{SECRET}@h", "connection_string": f"AccountName=a;AccountKey={SECRET}", "bucket": "b"}
    )
    assert SECRET not in str(masked) and masked["bucket"] == "b"


def test_the_cli_never_prints_a_url_secret() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "offload_core.cli", "ledgers", "ls", f"s3a://KEY:{SECRET}@bucket"],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert SECRET not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
