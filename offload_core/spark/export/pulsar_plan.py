"""What a Pulsar export reads: from a data directory's metadata, each
partition's tiered entries past its watermark, as ``pulsar-offload`` reads.

A topic is one managed ledger, or the ``TOPIC-partition-N`` ledgers of a
partitioned topic. Its ledgers are walked oldest first: a ledger offloaded
whole is tiered to its last entry, one being streamed (PIP-76) to the last
entry of its complete segments. The export takes the run of tiered entries
from the start with no gap: at the first ledger not tiered to its end it
stops, so an entry is never exported after one before it was skipped, and a
re-run starts right after the watermark. Each ledger is read from the store
its metadata recorded (the driver settings of its offload or segments), a
ledger offloaded whole from the objects of the uuid recorded only."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ...errors import NotFoundError
from ...managed_ledger import SqliteMetadataStore, TopicName
from ...managed_ledger.lifecycle.ledger_records import driver_metadata, parse_info, uuid_of
from ...managed_ledger.lifecycle.offloaders import store_location
from ...managed_ledger.streaming.segment_records import segment_settings, streamed_end
from ...proto import LedgerInfo
from .watermarks import Watermarks

__all__ = ["PartitionRead", "plan_topic"]

_PARTITION = re.compile(r"^(.*)-partition-(\d+)$")


@dataclass(frozen=True)
class PartitionRead:
    """One ``pulsar-offload`` read: entry ranges of one topic partition held
    in one store (``options`` are the source's)."""

    topic: str
    partition: int
    options: tuple[tuple[str, str], ...]


def _topic_ledgers(store: SqliteMetadataStore, topic: TopicName) -> Iterator[tuple[int, list[LedgerInfo]]]:
    """``(partition, ledgers)`` of the topic: -1 for a topic that is not
    partitioned, else one per ``-partition-N`` managed ledger."""
    prefix = f"managed-ledgers/{topic.tenant}/{topic.namespace_part}/persistent/"
    found = []
    for path in store.children("managed-ledgers/"):
        if not path.startswith(prefix):
            continue
        local = path.removeprefix(prefix)
        match = _PARTITION.match(local)
        if local == topic.local:
            found.append((-1, path))
        elif match is not None and match[1] == topic.local:
            found.append((int(match[2]), path))
    for partition, path in sorted(found):
        record = store.get(path)
        if record is not None:
            yield partition, list(parse_info(record.value, path).ledgerInfo)


def _tiered(ledger: LedgerInfo) -> tuple[int, dict[str, str], str | None] | None:
    """The last tiered entry of ``ledger``, the settings of its store and,
    offloaded whole, the uuid of its objects; ``None`` when nothing of it
    is tiered."""
    context = ledger.offloadContext
    if context.complete and context.HasField("uidMsb"):
        return int(ledger.entries) - 1, driver_metadata(context), str(uuid_of(context))
    end = streamed_end(context)
    if end < 0:
        return None
    last = max((s for s in context.offloadSegment if s.complete), key=lambda s: s.endEntryId)
    return end, segment_settings(last), None


def _store_options(settings: dict[str, str], data_dir: Path) -> dict[str, str]:
    """A recorded store as ``pulsar-offload``'s ``path`` and ``driver.*`` options."""
    driver, located = store_location(settings, data_dir)
    options = {"path": driver, **{f"driver.{name}": value for name, value in located.items()}}
    if settings.get("transforms"):
        options["driver.transforms"] = "auto"  # reads what any installed transform wrote
    return options


def plan_topic(data_dir: str | Path, topic: str, watermarks: Watermarks) -> list[PartitionRead]:
    """The reads that export ``topic``'s entries tiered past ``watermarks``.

    Raises :class:`NotFoundError` when the data directory has no metadata
    or no such topic, :class:`ConfigError` for a bad topic name."""
    root = Path(data_dir).resolve()
    name = TopicName.parse(topic)
    if not (root / "metadata.db").is_file():
        raise NotFoundError(f"{root} holds no broker metadata (metadata.db); give the broker's --data-dir")
    store = SqliteMetadataStore(root / "metadata.db")
    try:
        partitions = list(_topic_ledgers(store, name))
    finally:
        store.close()
    if not partitions:
        raise NotFoundError(f"no topic {name} (nor {name}-partition-N) in {root}; list them with `offload topics list`")
    reads = []
    for partition, ledgers in partitions:
        after = watermarks.get((str(name), partition), (-1, -1))
        ranges: dict[tuple[tuple[str, str], ...], list[str]] = {}
        whole: dict[tuple[tuple[str, str], ...], list[str]] = {}
        for ledger in ledgers:
            if ledger.HasField("entries") and ledger.entries == 0:
                continue  # sealed empty: nothing to wait for
            tiered = _tiered(ledger)
            if tiered is None:
                break
            last, settings, uid = tiered
            ledger_id = int(ledger.ledgerId)
            first = after[1] + 1 if ledger_id == after[0] else 0
            if ledger_id >= after[0] and first <= last:
                store_key = tuple(sorted(_store_options(settings, root).items()))
                ranges.setdefault(store_key, []).append(f"{ledger_id}:{first}-{last}")
                whole.setdefault(store_key, []).extend([f"{ledger_id}:{uid}"] if uid else [])
            if not ledger.HasField("entries") or last < int(ledger.entries) - 1:
                break  # not tiered to its end: what follows waits for the next run
        for store_key, spans in ranges.items():
            # Only the offloads (v1 objects, MapFiles) the metadata names: a copy an abandoned offload left is not read.
            chosen = (("entries", ",".join(spans)), ("ledgerUuids", ",".join(whole.get(store_key, []))))
            reads.append(PartitionRead(str(name), partition, (*store_key, *chosen)))
    return reads
