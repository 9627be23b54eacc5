"""What a ``pulsar-offload`` task does when an object it reads was deleted
after the read was planned (``failOnDataLoss``): fail naming the object,
its ledger and the partition's entries, or keep the rows given and log
the entries skipped (see :mod:`offload_core.spark.data_loss`). A packed
partition goes on with its other ledgers and offloads after a skip."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import NotFoundError
from ..offload.ledgers.inventory import index_key_of
from ..storage import StorageDriver
from .block_ranges import BlockRangePartition, clipped
from .data_loss import entry_span, log_vanished_ledger
from .kind_partitions import OffloadPartition, ledger_entries, located_offload
from .ledger_groups import LedgerGroupPartition, ledger_index_partitions
from .store_tasks import Store

__all__ = ["kind_entries", "ledger_group_partitions", "vanished"]


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
    log_vanished_ledger(store.url, key, ledger_id, first_skipped, last_skipped, store.skips)


def ledger_group_partitions(
    store: Store, driver: StorageDriver, group: LedgerGroupPartition, fail_on_data_loss: bool
) -> Iterator[BlockRangePartition]:
    """Each ledger of ``group`` as the block-range partition of its wanted
    blocks, its index read through ``driver`` as the ledger comes; a
    ledger whose index was deleted since planning: see :func:`vanished`
    (skipped whole)."""
    for data_key, ledger_id, wanted in group.ledgers():
        try:
            planned = ledger_index_partitions(driver, group, data_key, ledger_id, wanted)
        except NotFoundError as exc:
            covered = clipped(0, None, wanted)
            vanished(store, index_key_of(data_key), ledger_id, covered, covered[0], covered[1], exc,
                     fail_on_data_loss)  # fmt: skip
            continue
        yield from planned


def kind_entries(
    store: Store, driver: StorageDriver, partition: OffloadPartition, fail_on_data_loss: bool
) -> Iterator[tuple[int, int, bytes]]:
    """Ledger id, entry id and payload of the wanted entries of a
    partition of other kinds' offloads, read through ``driver`` offload by
    offload, ledger by ledger; an offload deleted (or an object of it)
    since planning: see :func:`vanished`, for the ledger being read and
    each of the offload's ledgers after it."""
    for number, (locator, ledgers) in enumerate(partition.located):
        at = 0  # the ledger being read, by its place in ``ledgers``
        next_entry: int | None = None
        try:
            offload = located_offload(driver, partition, number, locator)
            for position, ledger_id in enumerate(ledgers):
                at, next_entry = position, None
                for entry_id, payload in ledger_entries(driver, partition, offload, ledger_id):
                    yield ledger_id, entry_id, payload
                    next_entry = entry_id + 1
        except NotFoundError as exc:
            key = _offload_name(partition, number, locator, exc)
            for lost in ledgers[at:]:
                covered = clipped(0, None, partition.entry_ranges(lost))
                first = covered[0] if lost != ledgers[at] or next_entry is None else max(next_entry, covered[0])
                vanished(store, key, lost, covered, first, covered[1], exc, fail_on_data_loss)


def _offload_name(partition: OffloadPartition, number: int, locator: str | None, exc: NotFoundError) -> str:
    """What to name a vanished offload by: the kind's error names the
    object it missed; else its locator (a MapFile ledger's directory), or
    every object of an offload carried whole."""
    keys = partition.offloads[number].keys if locator is None else ()
    named = next((key for key in keys if key in str(exc)), None)
    return named or locator or ", ".join(keys)
