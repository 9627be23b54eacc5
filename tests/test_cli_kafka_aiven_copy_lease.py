"""Two `offload kafka copy --layout aiven` runs on one partition: the
second, started while the first is uploading, is refused by the copier
lease the first holds in the store, so only one copy of the offsets is
committed; the lease is where neither the plugin nor our listing looks."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from offload_core.cli import aiven_copy
from offload_core.plugins import open_driver
from offload_core.rsm.aiven.keys import COPIER_LEASES, parse_key
from offload_core.rsm.aiven.listing import list_store
from tests.rsm.segments import fixture_partition
from tests.test_cli_kafka import offload, offload_process
from tests.test_cli_kafka_aiven_copy import CASE, RUNS, TOPIC_ID, broker_properties


def test_a_second_copy_of_a_partition_being_copied_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = fixture_partition(CASE, tmp_path, TOPIC_ID)
    config = str(broker_properties(RUNS[1], tmp_path / "server.properties"))
    (tmp_path / "store").mkdir()
    uploading, go_on = threading.Event(), threading.Event()
    upload = aiven_copy.upload_aiven_segment

    def paused_upload(*args: Any, **kwargs: Any) -> bytes | None:
        uploading.set()  # the first copy holds its lease and is mid-upload: keep it there
        go_on.wait()
        return upload(*args, **kwargs)

    monkeypatch.setattr(aiven_copy, "upload_aiven_segment", paused_upload)
    args = ("copy", str(directory), "--all", "--layout", "aiven", "--config", config)
    first: dict[str, Any] = {}
    copier = threading.Thread(target=lambda: first.update(ran=offload(*args)))
    copier.start()
    try:
        uploading.wait()
        second = offload_process(*args)
    finally:
        go_on.set()
        copier.join()
    assert first["ran"].returncode == 0, first["ran"].stderr
    assert "copied 1 segment(s)" in first["ran"].stdout
    assert second.returncode == 1 and "another copy holds" in second.stderr, second.stderr
    with open_driver(f"file://{tmp_path / 'store'}") as driver:
        keys = [info.key for info in driver.list("")]
        listing = list_store(driver)
    assert sum(key.endswith(".rsm-manifest") for key in keys) == 1
    [partition] = listing.partitions()
    assert len(listing.segments[partition]) == 1 and not listing.leftovers
    leases = [key for key in keys if key.startswith(COPIER_LEASES)]
    assert leases and all(parse_key(key) is None for key in leases)  # given back: a tombstone the plugin never reads
