"""Chunk transforms set per namespace and per topic from the command line
(``set-``/``get-``/``remove-offload-transforms``, and ``--transforms`` of
``set-offload-policies``), and used by the offloads of that topic."""

from __future__ import annotations

import json
from pathlib import Path

from offload_core import open_driver
from offload_core.transforming_driver import CHAIN_KEY

from .test_cli_policies import offload, policies


def chains(bucket: Path) -> set[str]:
    """The transform chain each object in ``bucket`` records ("" for none)."""
    store = open_driver(f"file://{bucket}")
    return {store.stat(info.key).metadata.get(CHAIN_KEY, "") for info in store.list("")}


def offload_one_topic(tmp_path: Path, topic: str) -> None:
    for args in (("topics", "produce", topic, "--count", "100", "--size", "64"),
                 ("topics", "offload", topic)):  # fmt: skip
        done = offload(tmp_path, *args)
        assert done.returncode == 0, done.stderr


def test_transforms_set_on_a_namespace_and_overridden_on_a_topic(tmp_path: Path) -> None:
    done = offload(tmp_path, "namespaces", "set-offload-transforms", "acme/prod", "zstd,crc32c", "--chunk-size", "64k")
    assert done.returncode == 0, done.stderr
    assert "zstd,crc32c" in done.stdout
    done = offload(tmp_path, "topics", "set-offload-policies", "acme/prod/plain", "--transforms", "")
    assert done.returncode == 0, done.stderr

    got = offload(tmp_path, "topics", "get-offload-transforms", "acme/prod/orders", "--json")
    assert got.returncode == 0, got.stderr
    rows = json.loads(got.stdout)["policies"]
    assert rows["transforms"] == {"value": "zstd,crc32c", "from": "namespace"}
    assert rows["transform_chunk_size"] == {"value": 65536, "from": "namespace"}
    assert policies(tmp_path, "topics", "acme/prod/plain")["transforms"] == {"value": "", "from": "topic"}

    offload_one_topic(tmp_path, "acme/prod/orders")
    written = chains(tmp_path / "data" / "bucket")
    assert len(written) == 1 and "zstd" in written.pop()
    offload_one_topic(tmp_path, "acme/prod/plain")
    assert "" in chains(tmp_path / "data" / "bucket"), "the topic set to no transforms offloads plain objects"

    removed = offload(tmp_path, "namespaces", "remove-offload-transforms", "acme/prod")
    assert removed.returncode == 0, removed.stderr
    assert policies(tmp_path, "topics", "acme/prod/orders")["transforms"]["from"] == "broker"


def test_an_unknown_transform_is_refused_and_nothing_stored(tmp_path: Path) -> None:
    done = offload(tmp_path, "topics", "set-offload-transforms", "acme/prod/orders", "zstd,nope")
    assert done.returncode != 0 and "Traceback" not in done.stderr and "'nope'" in done.stderr
    assert policies(tmp_path, "topics", "acme/prod/orders")["transforms"]["from"] == "broker"
