"""Secrets given in URLs, endpoints or tokens never reach a message or a repr."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

from offload_core import ConfigError, open_driver
from offload_core.errors import mask_secret_text, mask_secrets
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
    assert mask_secret_text(f"root '/d?sig={SECRET}' at s3a://KEY:{SECRET}@b") == "root '/d?sig=***' at s3a://***@b"


def test_the_cli_never_prints_a_url_secret() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "offload_core.cli", "ledgers", "ls", f"s3a://KEY:{SECRET}@bucket"],
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert SECRET not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def offload(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "offload_core.cli", *args, "--data-dir", str(data_dir)],
                          capture_output=True, text=True)  # fmt: skip


def test_policy_verbs_mask_endpoint_and_driver_credentials_in_text_and_json(tmp_path: Path) -> None:
    data = tmp_path / "data"
    endpoint = f"http://user:{SECRET}@127.0.0.1:9000"
    printed = [
        offload(data, "namespaces", "set-offload-policies", "acme/prod", "-d", f"s3://KEY:{SECRET}@cold", "-b", "c"),
        offload(data, "topics", "set-offload-policies", "acme/prod/orders", "-d", "aws-s3", "-e", endpoint),
    ]
    for level, name in (("namespaces", "acme/prod"), ("topics", "acme/prod/orders")):
        printed += [offload(data, level, "get-offload-policies", name, *json_flag) for json_flag in ((), ("--json",))]
    for result in printed:
        assert result.returncode == 0, result.stderr
        assert SECRET not in result.stdout + result.stderr
    policies = json.loads(printed[-1].stdout)["policies"]
    assert policies["endpoint"] == {"value": "http://***@127.0.0.1:9000", "from": "topic"}
    assert policies["max_block_size"]["value"] == 64 << 20
    assert json.loads(printed[3].stdout)["policies"]["driver"]["value"] == "s3://***@cold"


def test_a_failed_offload_its_warnings_and_its_status_mask_a_url_secret(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (tmp_path / "a-file").touch()
    driver = f"file://{tmp_path}/a-file/bucket?sig={SECRET}"  # a store root that cannot be created
    assert offload(data, "topics", "set-offload-policies", "acme/prod/orders", "-d", driver).returncode == 0
    assert offload(data, "topics", "produce", "acme/prod/orders", "--count", "3").returncode == 0
    failed = offload(data, "topics", "offload", "acme/prod/orders")
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert "sweeping leftover files of killed writers" in failed.stderr and "error: ConfigError" in failed.stdout
    printed = [failed] + [offload(data, "topics", "offload-status", "acme/prod/orders", *json_flag)
                          for json_flag in ((), ("--json",))]  # fmt: skip
    for result in printed:
        assert SECRET not in result.stdout + result.stderr
        assert "sig=***" in result.stdout
    assert json.loads(printed[-1].stdout)["status"] == "error"
