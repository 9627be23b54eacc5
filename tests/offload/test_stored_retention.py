"""Retention's decision over offloads of any kind: a segment a managed
ledger records (in any of its ledgers' offload contexts) is kept."""

from __future__ import annotations

import uuid as uuid_module
from pathlib import Path

from offload_core.managed_ledger import SqliteMetadataStore
from offload_core.managed_ledger.lifecycle.ledger_records import uid_halves
from offload_core.managed_ledger.lifecycle.references import offload_references
from offload_core.offload.stored.kinds import StoredOffload
from offload_core.offload.stored.retention import decide
from offload_core.proto import ManagedLedgerInfo

OLD_MS = 1_700_000_000_000


def segment(uid: str, *ledgers: int) -> StoredOffload:
    return StoredOffload("pulsar-segment", uid, ledgers, (uid, f"{uid}-index"), 10, True, f"segment {uid}", None,
                         created_ms=OLD_MS)  # fmt: skip


def test_a_segment_a_managed_ledger_records_is_kept_and_the_others_are_orphans(tmp_path: Path) -> None:
    recorded, orphan = uuid_module.uuid4(), uuid_module.uuid4()
    info = ManagedLedgerInfo()
    ledger = info.ledgerInfo.add(ledgerId=6)
    part = ledger.offloadContext.offloadSegment.add()
    part.uidMsb, part.uidLsb = uid_halves(recorded)
    store = SqliteMetadataStore(tmp_path / "metadata.db")
    try:
        store.create("managed-ledgers/acme/prod/orders", info.SerializeToString())
        references = offload_references(store)
    finally:
        store.close()
    assert references == {(6, str(recorded)): "acme/prod/orders"}
    kept = decide(segment(str(recorded), 5, 6), references, OLD_MS + 1, delete_orphans=True, dry_run=False)
    assert (kept.action, kept.referenced_by, kept.orphan) == ("keep", "acme/prod/orders", False)
    gone = decide(segment(str(orphan), 5, 6), references, None, delete_orphans=True, dry_run=False)
    assert (gone.action, gone.orphan, gone.keys) == ("deleted", True, [str(orphan), f"{orphan}-index"])
