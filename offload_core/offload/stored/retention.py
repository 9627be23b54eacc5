"""Deciding what retention deletes among stored offloads of any kind:
shared by the Spark ``retention`` job and ``offload ledgers orphans`` (for
stores small enough not to need Spark).

With a metadata store, offloads a managed ledger refers to (by uuid) are
never deleted here: the managed ledger's own retention trims them,
metadata and objects together; the others are orphans, except an offload
whose ledgers are unknown (a segment whose index is not yet written or
cannot be read): it may be one still being written, so it is kept.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...storage import StorageDriver
from .kinds import StoredKind, StoredOffload

__all__ = ["RetentionDecision", "decide", "delete_offload"]


@dataclass(frozen=True)
class RetentionDecision:
    """What the job does (or, in a dry run, would do) with one offload.

    ``action`` is ``delete`` (dry run), ``deleted``, ``keep`` or ``failed``.
    ``orphan`` is ``None`` without a metadata store (it cannot be known)."""

    offload: StoredOffload
    referenced_by: str | None
    orphan: bool | None
    action: str
    reason: str

    @property
    def created_ms(self) -> int | None:
        return self.offload.created_ms

    @property
    def keys(self) -> list[str]:
        return list(self.offload.keys)

    @property
    def size(self) -> int:
        return self.offload.size


def decide(
    offload: StoredOffload,
    references: dict[str, str] | None,
    cutoff_ms: int | None,
    delete_orphans: bool,
    dry_run: bool,
) -> RetentionDecision:
    """What happens to ``offload`` (described: its ledgers and age read):
    kept when a managed ledger refers to it; deleted when it is an orphan
    and ``delete_orphans``, or was created before ``cutoff_ms`` (``None``:
    no age cut-off); kept otherwise. ``references`` maps the uuid of each
    offload a managed ledger records to its name; ``None`` means no
    metadata store: orphans are unknown. An offload no managed ledger
    refers to is an orphan only once its ledgers are known: until then it
    is kept ("ledgers unknown"), as it may be one still being written."""
    referenced_by = None if references is None else references.get(offload.uuid)
    orphan = None if references is None else referenced_by is None
    go = "delete" if dry_run else "deleted"
    created = offload.created_ms

    def decided(action: str, reason: str) -> RetentionDecision:
        return RetentionDecision(offload, referenced_by, orphan, action, reason)

    if referenced_by is not None:
        return decided("keep", f"referenced by managed ledger {referenced_by} (its retention policy trims it)")
    if orphan and not offload.ledger_ids:
        return RetentionDecision(offload, None, None, "keep",
                                 "ledgers unknown: the index is missing or unreadable (an offload still being "
                                 "written?); an orphan only once its index is read")  # fmt: skip
    if orphan and delete_orphans:
        return decided(go, "orphan: no managed ledger refers to it")
    if cutoff_ms is None:
        return decided("keep", "orphan (kept: pass --delete to delete orphans)" if orphan else "no age cut-off")
    if created is None:
        return decided("keep", "age unknown: the index is missing, unreadable or records none")
    if created < cutoff_ms:
        return decided(go, "created before the cut-off" + (" (orphan)" if orphan else ""))
    return decided("keep", "created after the cut-off" + (" (orphan)" if orphan else ""))


def delete_offload(kind: StoredKind, driver: StorageDriver, offload: StoredOffload) -> str | None:
    """Delete ``offload``'s objects; the error as text, or ``None``."""
    try:
        kind.delete(driver, offload)
    except Exception as exc:  # reported per offload, so the others still go
        return f"{type(exc).__name__}: {exc}"
    return None
