"""Read-committed isolation as Kafka decides it, from the files a log
keeps beside its batches. Pure.

- Aborted: a transaction a ``.txnindex`` lists. Its entry sits in the
  index of the segment holding its ABORT marker, which may come segments
  after its records, so Kafka (``UnifiedLog`` / ``RemoteLogManager``
  ``collectAbortedTransactions``) searches the index of the segment
  holding the fetch offset and those after it, stopping at the first entry
  whose last stable offset reaches the fetch's upper bound
  (``TransactionIndex.collectAbortedTxns``): no transaction begun before
  that bound is still open after it.
- Undecided: a transaction with no COMMIT or ABORT marker in the log yet.
  The producer snapshot taken at the log's end names each one (its current
  transaction's first offset); the first of them is the last stable
  offset, and a read_committed fetch returns nothing from there on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .kafka_indexes import AbortedTxn, ProducerSnapshotEntry
from .kafka_records import BatchHeader

__all__ = ["collect_aborted_txns", "first_undecided", "is_aborted"]

_NO_TRANSACTION = -1


def collect_aborted_txns(
    indexes: Iterable[Sequence[AbortedTxn]], fetch_offset: int, upper_bound: int
) -> list[AbortedTxn]:
    """The aborted transactions overlapping offsets ``[fetch_offset,
    upper_bound)``, from ``indexes``: the transaction indexes of the segment
    holding ``fetch_offset`` and of every segment after it, in order. The
    iterable is consumed lazily: indexes past the one that completes the
    search are never asked for."""
    found = []
    for entries in indexes:
        for txn in entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found
    return found


def first_undecided(snapshot: Iterable[ProducerSnapshotEntry]) -> ProducerSnapshotEntry | None:
    """The producer whose open transaction began first, from a producer
    snapshot taken at the end of a log (its ``current_txn_first_offset``
    is the log's last stable offset), or ``None`` if none is open."""
    open_ones = [e for e in snapshot if e.current_txn_first_offset != _NO_TRANSACTION]
    return min(open_ones, key=lambda e: e.current_txn_first_offset, default=None)


def is_aborted(aborted: Iterable[AbortedTxn], batch: BatchHeader) -> bool:
    """Whether transactional ``batch`` belongs to one of the ``aborted``
    transactions (its producer's, begun at or before it, ended at or after)."""
    return any(
        t.producer_id == batch.producer_id and t.first_offset <= batch.base_offset <= t.last_offset for t in aborted
    )
