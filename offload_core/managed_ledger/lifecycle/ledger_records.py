"""What the managed ledger reports and the helpers its metadata records need. Pure."""

from __future__ import annotations

import uuid as uuid_module
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from google.protobuf.message import DecodeError

from ...errors import (
    OffloadError,
)
from ...model import Entry, Position
from ...proto import ManagedLedgerInfo, OffloadContext, OffloadSegment
from ..hot.ledger_file import LedgerFile
from ..metadata_store import MetadataStore

Tier = Literal["hot", "offloaded"]


@dataclass(frozen=True)
class TieredEntry:
    """An entry and the tier that served it."""

    entry: Entry
    tier: Tier


@dataclass(frozen=True)
class LedgerState:
    """One ledger as ``offload topics stats`` shows it."""

    ledger_id: int
    entries: int
    size: int
    sealed: bool
    tier: str  # hot | offloading | hot+offloaded | offloaded
    uuid: str | None
    closed_at_ms: int | None


@dataclass(frozen=True)
class OffloadStatus:
    """The outcome of the last offload run (Pulsar's OffloadProcessStatus)."""

    status: str  # not-run | running | interrupted | success | error
    first_unoffloaded: Position | None = None
    offloaded_ledgers: int = 0
    error: str | None = None


@dataclass(frozen=True)
class UnfinishedOffload:
    """An offload prepared (uid recorded, ``complete=false``) and not
    finished: interrupted, or failed with its cleanup failing too. It holds
    no reads back (the ledger is read from the hot tier) but its objects, if
    any, stay until it is cleaned up."""

    ledger_id: int
    uuid: str
    settings: dict[str, str]
    cleanup_error: str | None


@dataclass
class ReadStats:
    """Entries served per tier and fallbacks between tiers."""

    served: Counter[str] = field(default_factory=Counter)
    fallbacks: Counter[str] = field(default_factory=Counter)


def uid_halves(uid: uuid_module.UUID) -> tuple[int, int]:
    def signed(value: int) -> int:
        return value - (1 << 64) if value >= 1 << 63 else value

    return signed(uid.int >> 64), signed(uid.int & ((1 << 64) - 1))


def uuid_of(context: OffloadContext | OffloadSegment) -> uuid_module.UUID:
    msb = context.uidMsb & ((1 << 64) - 1)
    lsb = context.uidLsb & ((1 << 64) - 1)
    return uuid_module.UUID(int=(msb << 64) | lsb)


def driver_metadata(context: OffloadContext) -> dict[str, str]:
    return {pair.key: pair.value for pair in context.driverMetadata.properties}


def clear_context(info: ManagedLedgerInfo, ledger_id: int, uid: uuid_module.UUID) -> None:
    """Clear ledger ``ledger_id``'s offload context if it is still the
    unfinished attempt ``uid`` (not replaced, not completed meanwhile),
    keeping the segments that streamed part of it."""
    for ledger in info.ledgerInfo:
        if ledger.ledgerId == ledger_id:
            context = ledger.offloadContext
            if context.HasField("uidMsb") and uuid_of(context) == uid and not context.complete:
                segments = list(context.offloadSegment)  # streamed parts stay recorded
                ledger.ClearField("offloadContext")
                ledger.offloadContext.offloadSegment.extend(segments)


def parse_info(raw: bytes, path: str) -> ManagedLedgerInfo:
    try:
        info: ManagedLedgerInfo = ManagedLedgerInfo.FromString(raw)
    except (DecodeError, RuntimeWarning, ValueError) as exc:
        raise OffloadError(
            f"metadata record {path!r} is not a ManagedLedgerInfo ({exc}): the metadata store is damaged; restore "
            "metadata.db from a backup"
        ) from None
    return info


def unclaimed_hot_files(store: MetadataStore, ledger_dir: Path) -> list[int]:
    """Ids of hot-tier ledger files holding entries that no managed ledger
    in ``store`` names, sorted."""
    claimed: set[int] = set()
    for path in store.children("managed-ledgers/"):
        record = store.get(path)
        if record is not None:
            claimed.update(ledger.ledgerId for ledger in parse_info(record.value, path).ledgerInfo)
    found = []
    for file in ledger_dir.glob("*.log") if ledger_dir.is_dir() else ():
        ledger_id = int(file.stem) if file.stem.isascii() and file.stem.isdigit() else None
        if ledger_id is not None and ledger_id not in claimed and file.stat().st_size > LedgerFile.HEADER_SIZE:
            found.append(ledger_id)
    return sorted(found)


def remove_ledger(info: ManagedLedgerInfo, ledger_id: int) -> None:
    kept = [ledger for ledger in info.ledgerInfo if ledger.ledgerId != ledger_id]
    del info.ledgerInfo[:]
    info.ledgerInfo.extend(kept)
