"""Key validation and the error hierarchy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offload_core import errors
from offload_core.keys import validate_key, validate_prefix
from offload_core.storage import key_prefix
from offload_core.testing.driver_contract import BAD_KEYS


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_keys(key: str) -> None:
    with pytest.raises(errors.InvalidKeyError):
        validate_key(key)


@given(st.lists(st.sampled_from(["a", "..", ".", "", "b", "/", "\\", "\x00", "ü"]), max_size=6).map("".join))
def test_no_valid_key_can_escape_the_root(key: str) -> None:
    try:
        validate_key(key)
    except errors.InvalidKeyError:
        return
    segments = key.split("/")
    assert not key.startswith("/")
    assert ".." not in segments and "." not in segments and "" not in segments


def test_prefixes_may_end_mid_segment_or_with_a_slash() -> None:
    for prefix in ["", "a", "a/", "a/b", "tenant/ns/"]:
        assert validate_prefix(prefix) == prefix
    for prefix in ["/a", "a/../", "..", "a//b"]:
        with pytest.raises(errors.InvalidKeyError):
            validate_prefix(prefix)


def test_error_hierarchy() -> None:
    assert issubclass(errors.NotFoundError, FileNotFoundError)
    assert issubclass(errors.AlreadyExistsError, FileExistsError)
    for name in errors.__all__:
        value = getattr(errors, name)
        if isinstance(value, type):
            assert issubclass(value, errors.OffloadError)
    assert str(errors.NotFoundError("object 'k' not found", key="k")) == "object 'k' not found"
    assert issubclass(errors.DriverNotInstalledError, errors.ConfigError)


def test_mask_secrets() -> None:
    masked = errors.mask_secrets(
        {
            "bucket": "b",
            "secret_access_key": "SECRET1",
            "access_key_id": "AKIA",
            "connection_string": "DefaultEndpointsProtocol=http;AccountName=dev;AccountKey=SECRET2;",
            "sas_token": "sv=1&sig=SECRET3",
            "endpoint": "http://127.0.0.1:9000/?sig=SECRET4",
        }
    )
    assert "SECRET" not in repr(masked)
    assert masked["bucket"] == "b"
    assert "AccountName=dev" in str(masked["connection_string"])


@pytest.mark.parametrize(
    ("given_prefix", "joined"),
    [("", ""), ("/", ""), ("ledgers", "ledgers/"), ("/a/b/", "a/b/"), ("a/b", "a/b/")],
)
def test_bucket_prefixes_end_in_one_slash_or_are_empty(given_prefix: str, joined: str) -> None:
    assert key_prefix(given_prefix) == joined
