"""Broker data directories with Pulsar topics offloaded whole (v1 ledgers)
or streamed (v2 segments), their entries Pulsar messages (batches among
them) built as tests/spark/test_pulsar_messages.py builds them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_core.managed_ledger import Broker, parse_config
from tests.spark.test_pulsar_messages import build_ledger

SETTINGS = {"managedLedgerMaxEntriesPerLedger": 40, "managedLedgerOffloadMaxBlockSizeInBytes": 4096,
            "managedLedgerOffloadWorkerProcesses": 0, "managedLedgerFsyncPolicy": "none"}  # fmt: skip
STREAMING = {**SETTINGS, "managedLedgerOffloadStreamingEnabled": True, "maxSizePerOffloadSegmentMbytes": 1}
ENTRIES, ROWS = build_ledger(0)  # 120 entries; ROWS by entry number (ledger id 0 stands for "the topic")


def config(streaming: bool) -> Any:
    return parse_config(STREAMING if streaming else SETTINGS)


def append_and_offload(data_dir: Path, topic: str, entries: list[bytes], *, streaming: bool,
                       settings: dict[str, Any] | None = None) -> None:  # fmt: skip
    """Append ``entries`` to ``topic`` and tier what can be: sealed ledgers
    offloaded whole, or everything streamed, as the topic's policy says
    (with broker ``settings`` over this module's)."""
    base = STREAMING if streaming else SETTINGS
    with Broker(data_dir, parse_config({**base, **(settings or {})})) as broker:
        ledger = broker.topic(topic)
        for entry in entries:
            ledger.append(entry)
        assert ledger.offload_prefix().status == "success"
        assert broker.drain(60)


def message_rows(count: int) -> list[tuple[Any, ...]]:
    """The rows of the first ``count`` message entries, without their
    ledger and entry ids (the broker picks those): entry number, batch
    index, payload, key, producer, sequence id, properties."""
    picked = [(row[1], row[2], row[3], row[6], row[8], row[9], row[7]) for row in ROWS if row[1] < count]
    return sorted(picked, key=repr)
