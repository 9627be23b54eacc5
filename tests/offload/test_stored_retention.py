"""Retention's decision over offloads of any kind: a segment a managed
ledger records (in any of its ledgers' offload contexts) is kept, and so
is one whose ledgers are unknown (its index unwritten or unreadable)."""

from __future__ import annotations

import uuid as uuid_module
from pathlib import Path

from offload_core.managed_ledger import SqliteMetadataStore
from offload_core.managed_ledger.lifecycle.ledger_records import uid_halves
from offload_core.managed_ledger.lifecycle.references import offload_references
from offload_core.memory import MemoryDriver
from offload_core.offload.stored.kinds import StoredOffload
from offload_core.offload.stored.pulsar_segments import PULSAR_SEGMENTS
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
    assert references == {str(recorded): "acme/prod/orders"}
    kept = decide(segment(str(recorded), 5, 6), references, OLD_MS + 1, delete_orphans=True, dry_run=False)
    assert (kept.action, kept.referenced_by, kept.orphan) == ("keep", "acme/prod/orders", False)
    gone = decide(segment(str(orphan), 5, 6), references, None, delete_orphans=True, dry_run=False)
    assert (gone.action, gone.orphan, gone.keys) == ("deleted", True, [str(orphan), f"{orphan}-index"])


def test_a_segment_whose_index_is_missing_or_unreadable_is_never_an_orphan() -> None:
    driver = MemoryDriver()
    writing, unreadable = uuid_module.uuid4(), uuid_module.uuid4()
    driver.write(str(writing), b"data of a segment whose index is not yet written")
    driver.write(str(unreadable), b"data")
    driver.write(f"{unreadable}-index", b"not an index")
    found = [PULSAR_SEGMENTS.describe(driver, offload) for offload in PULSAR_SEGMENTS.find(driver, "")]
    assert {offload.uuid for offload in found} == {str(writing), str(unreadable)}
    for offload in found:
        decision = decide(offload, {}, OLD_MS, delete_orphans=True, dry_run=False)
        assert (decision.action, decision.orphan) == ("keep", None)
        assert decision.reason.startswith("ledgers unknown")


def test_a_segment_is_referenced_by_its_uuid_while_its_ledgers_are_unknown() -> None:
    recorded = str(uuid_module.uuid4())
    decision = decide(segment(recorded), {recorded: "acme/prod/orders"}, None, delete_orphans=True, dry_run=False)
    assert (decision.action, decision.referenced_by, decision.orphan) == ("keep", "acme/prod/orders", False)
