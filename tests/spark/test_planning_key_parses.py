"""Planning a ``pulsar-offload`` read parses each listed key once: the one
listing feeds the whole-ledger pairing, the segments' pairing and the
listing kept for the other kinds, each with the key as it was parsed."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.model import Entry
from offload_core.plugins import open_driver
from offload_core.spark import plan_partitions
from offload_core.spark.kind_partitions import OffloadPartition
from offload_core.spark.ledger_groups import LedgerGroupPartition
from tests.spark.planned_blocks import planned_ledger_ids
from tests.spark.test_jobs_over_mapfiles import write_mapfile
from tests.spark.test_pulsar_offload_segments import stream


def test_each_listed_key_is_parsed_once_by_each_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=4096)
    for ledger_id in range(5):
        offloader.offload(InMemoryReadHandle(ledger_id, [b"v1"] * 5), uuid.uuid4())
    for ledger_id in range(10, 13):
        stream(url, [Entry(ledger_id, entry_id, b"v2") for entry_id in range(5)])
    write_mapfile(url, 20)
    parsed: dict[str, Counter[str]] = {"v1": Counter(), "v2": Counter()}

    def counted(name: str, parse: Any) -> Any:
        def call(key: str) -> Any:
            parsed[name][key] += 1
            return parse(key)

        return call

    monkeypatch.setattr(v1, "parse_key", counted("v1", v1.parse_key))
    monkeypatch.setattr(v2, "parse_segment_key", counted("v2", v2.parse_segment_key))
    planned = plan_partitions({"path": url})
    counts = {name: dict(keys) for name, keys in parsed.items()}
    monkeypatch.undo()

    listed = [info.key for info in open_driver(url).list("")]
    assert counts["v1"] == dict.fromkeys(listed, 1)
    assert counts["v2"] == dict.fromkeys([key for key in listed if v1.parse_key(key) is None], 1)
    ledgers = [ledger_id for p in planned if isinstance(p, LedgerGroupPartition) for _, ledger_id, _ in p.ledgers()]
    others = [p for p in planned if not isinstance(p, (LedgerGroupPartition, OffloadPartition))]
    assert sorted(ledgers) == list(range(5)) and sorted(planned_ledger_ids(others)) == [10, 11, 12]
    assert [p.ledger_ids for p in planned if isinstance(p, OffloadPartition)] == [(20,)]
