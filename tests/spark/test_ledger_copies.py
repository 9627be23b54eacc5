"""A store holding two complete copies of a ledger (an abandoned offload's
and the broker's second one): the batch and streaming Pulsar readers
refuse to guess, naming both uuids, and read the one ``ledgerUuids``
names."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.errors import ConfigError
from offload_core.spark import plan_partitions
from offload_core.spark.source import SCHEMA
from offload_core.spark.streaming_pulsar import make_stream_reader

pytestmark = pytest.mark.spark

ENTRIES = [f"entry {n}".encode() for n in range(40)]


@pytest.fixture
def twice_offloaded(tmp_path: Path) -> tuple[str, str, str]:
    url = f"file://{tmp_path / 'bucket'}"
    offloader = open_offloader(url, max_block_size=4096)
    abandoned, kept = sorted(str(uuid.uuid4()) for _ in range(2))
    for uid in (abandoned, kept):
        offloader.offload(InMemoryReadHandle(3, ENTRIES), uuid.UUID(uid))
    offloader.offload(InMemoryReadHandle(4, ENTRIES), uuid.uuid4())
    return url, abandoned, kept


def test_the_batch_reader_names_both_copies_and_reads_the_chosen_one(twice_offloaded: tuple[str, str, str]) -> None:
    url, abandoned, kept = twice_offloaded
    with pytest.raises(
        ConfigError, match=f"2 complete copies of ledger 3 \\(uuids {abandoned}, {kept}\\).*ledgerUuids"
    ):
        plan_partitions({"path": url})
    chosen = plan_partitions({"path": url, "ledgers": "3", "ledgerUuids": f"3:{kept}"})
    assert {key.split("-ledger-")[0] for partition in chosen for key in partition.data_keys} == {kept}
    assert plan_partitions({"path": url, "ledgers": "4"})  # a wanted ledger with one copy reads as before


def test_the_streaming_reader_names_both_copies_and_reads_the_chosen_one(
    twice_offloaded: tuple[str, str, str],
) -> None:
    url, abandoned, kept = twice_offloaded
    stream = make_stream_reader({"path": url}, SCHEMA)
    with pytest.raises(ConfigError, match=f"ledger 3 \\(uuids {abandoned}, {kept}\\)"):
        stream.latestOffset(stream.initialOffset(), ReadAllAvailable())
    chosen = make_stream_reader({"path": url, "ledgerUuids": f"3:{kept}"}, SCHEMA)
    start = chosen.initialOffset()
    partitions = chosen.partitions(start, chosen.latestOffset(start, ReadAllAvailable()))
    read = sorted((ledger_id, key.split("-ledger-")[0]) for partition in partitions
                  for key, ledger_id, _ in partition.ledgers())  # fmt: skip
    assert read == [(3, kept)]
