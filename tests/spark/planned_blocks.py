"""A plan's block-range partitions as its tasks see them: a packed group of
small whole-ledger offloads is expanded the way its task expands it (each
ledger's index read then), and packed segment runs unpacked, so tests can
check which blocks a read takes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from offload_core.plugins import open_driver
from offload_core.spark.block_ranges import BlockRangePartition
from offload_core.spark.kind_partitions import OffloadPartition
from offload_core.spark.ledger_groups import LedgerGroupPartition
from offload_core.spark.packed_runs import PackedRunsPartition
from offload_core.spark.store_tasks import Store
from offload_core.spark.vanished_objects import ledger_group_partitions


def planned_ledger_ids(plan: Sequence[Any]) -> list[int]:
    """The ledger of every partition of ``plan``; of a packed one, each of its ledgers (or runs)."""
    ids: list[int] = []
    for partition in plan:
        if isinstance(partition, LedgerGroupPartition):
            ids += [ledger_id for _, ledger_id, _ in partition.ledgers()]
        elif isinstance(partition, PackedRunsPartition):
            ids += [run.ledger_id for run in partition.runs()]
        elif isinstance(partition, OffloadPartition):
            ids += partition.ledger_ids
        else:
            ids.append(partition.ledger_id)
    return ids


def block_partitions(url: str, plan: Sequence[Any]) -> list[BlockRangePartition]:
    """The block-range partitions ``plan`` reads from the store at ``url``,
    in order (other kinds' partitions left out)."""
    expanded: list[BlockRangePartition] = []
    with open_driver(url) as driver:
        for partition in plan:
            if isinstance(partition, LedgerGroupPartition):
                expanded += ledger_group_partitions(Store.of(url), driver, partition, True)
            elif isinstance(partition, PackedRunsPartition):
                expanded += partition.runs()
            elif isinstance(partition, BlockRangePartition):
                expanded.append(partition)
    return expanded
