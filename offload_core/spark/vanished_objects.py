"""What a ``pulsar-offload`` task does when an object it reads was deleted
after the read was planned (``failOnDataLoss``): fail naming the object,
its ledger and the partition's entries, or keep the rows given and log
the entries skipped (see :mod:`offload_core.spark.data_loss`)."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import NotFoundError
from .data_loss import entry_span, log_vanished_ledger
from .kind_partitions import OffloadPartition, read_kind_partition
from .store_tasks import Store

__all__ = ["clipped", "kind_entries", "vanished"]


def clipped(first: int, last: int | None, ranges: tuple[tuple[int, int | None], ...]) -> tuple[int, int | None]:
    """Entries ``first`` to ``last`` (``None``: open-ended) narrowed to the
    span of ``ranges``."""
    low = max(first, min(start for start, _ in ranges))
    ends = [end for _, end in ranges]
    high = None if None in ends else max(end for end in ends if end is not None)
    if last is not None:
        high = last if high is None else min(high, last)
    return low, high


def vanished(
    store: Store,
    key: str,
    ledger_id: int,
    covered: tuple[int, int | None],
    first_skipped: int,
    last_skipped: int | None,
    exc: NotFoundError,
    fail_on_data_loss: bool,
) -> None:
    """Object ``key`` of a partition of ``store`` was deleted after the read
    was planned: raise :class:`NotFoundError` naming it, its ledger and the
    entries the partition ``covered``; with ``failOnDataLoss=false`` log
    the entries skipped instead (see :mod:`offload_core.spark.data_loss`)."""
    if fail_on_data_loss:
        raise NotFoundError(f"{key} (ledger {ledger_id}, entries {entry_span(*covered)}) vanished after the read "
                            f"was planned: {exc}; set failOnDataLoss=false to skip what is gone") from None  # fmt: skip
    log_vanished_ledger(store.url, key, ledger_id, first_skipped, last_skipped)


def kind_entries(store: Store, partition: OffloadPartition, fail_on_data_loss: bool) -> Iterator[tuple[int, bytes]]:
    """The wanted entries of a partition of another kind's offload; an
    object of it deleted since planning: see :func:`vanished`."""
    covered = clipped(0, None, partition.entry_ranges)
    next_entry = covered[0]
    try:
        for entry_id, payload in read_kind_partition(store, partition):
            yield entry_id, payload
            next_entry = entry_id + 1
    except NotFoundError as exc:
        keys = partition.offload.keys
        # The kind's error names the object it missed; else every object of the offload is named.
        key = next((key for key in keys if key in str(exc)), ", ".join(keys))
        vanished(store, key, partition.ledger_id, covered, max(next_entry, covered[0]), covered[1], exc,
                 fail_on_data_loss)  # fmt: skip
