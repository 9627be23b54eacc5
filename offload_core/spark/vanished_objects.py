"""What a ``pulsar-offload`` task does when an object it reads was deleted
after the read was planned (``failOnDataLoss``): fail naming the object,
its ledger and the partition's entries, or keep the rows given and log
the entries skipped (see :mod:`offload_core.spark.data_loss`). A packed
partition goes on with its other ledgers and offloads after a skip."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import NotFoundError
from .block_ranges import BlockRangePartition, clipped
from .data_loss import entry_span, log_vanished_ledger
from .kind_partitions import OffloadPartition, offload_entries
from .ledger_groups import LedgerGroupPartition, index_key_of, ledger_index_partitions
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
    log_vanished_ledger(store.url, key, ledger_id, first_skipped, last_skipped)


def ledger_group_partitions(
    store: Store, group: LedgerGroupPartition, fail_on_data_loss: bool
) -> Iterator[BlockRangePartition]:
    """Each ledger of ``group`` as the block-range partition of its wanted
    blocks, its index read as the ledger comes; a ledger whose index was
    deleted since planning: see :func:`vanished` (skipped whole)."""
    driver = store.open()
    try:
        for data_key, ledger_id, wanted in group.ledgers():
            try:
                planned = ledger_index_partitions(driver, group, data_key, ledger_id, wanted)
            except NotFoundError as exc:
                covered = clipped(0, None, wanted)
                vanished(store, index_key_of(data_key), ledger_id, covered, covered[0], covered[1], exc,
                         fail_on_data_loss)  # fmt: skip
                continue
            yield from planned
    finally:
        driver.close()


def kind_entries(
    store: Store, partition: OffloadPartition, fail_on_data_loss: bool
) -> Iterator[tuple[int, int, bytes]]:
    """Ledger id, entry id and payload of the wanted entries of a
    partition of other kinds' offloads, offload by offload; an offload
    deleted (or an object of it) since planning: see :func:`vanished`, for
    each of its ledgers not yet read to its end."""
    driver = store.open()
    try:
        for number, (locator, ledgers) in enumerate(partition.located):
            next_entry: dict[int, int] = {}
            try:
                for ledger_id, entry_id, payload in offload_entries(driver, partition, number, locator, ledgers):
                    yield ledger_id, entry_id, payload
                    next_entry[ledger_id] = entry_id + 1
            except NotFoundError as exc:
                key = _offload_name(partition, number, locator, exc)
                started = [ledger for ledger in ledgers if ledger in next_entry]
                # A ledger is read to its end before the next starts: all but the last begun are whole.
                for ledger_id in [*started[-1:], *(ledger for ledger in ledgers if ledger not in next_entry)]:
                    covered = clipped(0, None, partition.entry_ranges(ledger_id))
                    first = max(next_entry.get(ledger_id, covered[0]), covered[0])
                    vanished(store, key, ledger_id, covered, first, covered[1], exc, fail_on_data_loss)
    finally:
        driver.close()


def _offload_name(partition: OffloadPartition, number: int, locator: str | None, exc: NotFoundError) -> str:
    """What to name a vanished offload by: the kind's error names the
    object it missed; else its locator (a MapFile ledger's directory), or
    every object of an offload carried whole."""
    keys = partition.offloads[number].keys if locator is None else ()
    named = next((key for key in keys if key in str(exc)), None)
    return named or locator or ", ".join(keys)
