"""Store URLs are pinned on the driver, so executors open the same store."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.spark.kafka_remote import parse_options
from offload_core.spark.read_options import parse_read_options
from offload_core.spark.store_tasks import Store
from offload_core.spark.store_urls import pinned_url

pytestmark = pytest.mark.spark


def test_relative_and_home_file_roots_become_absolute_other_urls_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert pinned_url("file://bucket/ledgers") == f"file://{tmp_path}/bucket/ledgers"
    assert pinned_url("file://~/bucket") == f"file://{tmp_path}/home/bucket"
    assert pinned_url("file:///abs/bucket") == "file:///abs/bucket"
    assert pinned_url("s3://bucket/prefix") == "s3://bucket/prefix"
    assert pinned_url("memory://x") == "memory://x"


def test_the_sources_and_the_jobs_pin_their_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Store.of("file://bucket").url == f"file://{tmp_path}/bucket"
    assert parse_read_options({"path": "file://bucket"}).url == f"file://{tmp_path}/bucket"
    assert parse_options({"url": "file://bucket", "topic": "orders"}).url == f"file://{tmp_path}/bucket"
