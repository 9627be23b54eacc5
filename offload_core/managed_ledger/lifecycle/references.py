"""Which offloaded objects the managed ledgers' metadata names."""

from __future__ import annotations

from ...proto import ManagedLedgerInfo
from ..metadata_store import MetadataStore
from .ledger_records import uuid_of

__all__ = ["offload_references"]

_PREFIX = "managed-ledgers/"


def offload_references(store: MetadataStore) -> dict[str, str]:
    """The uuid of every offload some managed ledger records, complete or
    still in progress (its uid is stored before any object is written),
    mapped to the managed ledger's name: the ledger's own offload and each
    streaming segment that holds entries of it. Keyed by uuid alone, as a
    uuid is unique to an offload: an offload whose ledgers are not yet
    known (a segment whose index is unwritten or unreadable) is still
    found."""
    references: dict[str, str] = {}
    for path in store.children(_PREFIX):
        record = store.get(path)
        if record is None:
            continue  # deleted while listing
        info = ManagedLedgerInfo.FromString(record.value)
        for ledger in info.ledgerInfo:
            name = path.removeprefix(_PREFIX)
            if ledger.offloadContext.HasField("uidMsb"):
                references[str(uuid_of(ledger.offloadContext))] = name
            for segment in ledger.offloadContext.offloadSegment:
                references[str(uuid_of(segment))] = name
    return references
