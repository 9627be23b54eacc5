"""verify's stages (plan, check each block, summarize) combine blocks checked in any order."""

from __future__ import annotations

import pickle
import random
import uuid

from offload_core import InMemoryReadHandle
from offload_core.memory import MemoryDriver
from offload_core.offload import BlobStoreLedgerOffloader
from offload_core.offload.inventory import find_offloaded_ledgers
from offload_core.offload.verify import LedgerPlan, plan_ledger, read_and_check_block, summarize_ledger


def planned(entries: int = 80) -> tuple[MemoryDriver, LedgerPlan]:
    driver = MemoryDriver()
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=2048)
    rng = random.Random(1)
    offloader.offload(
        InMemoryReadHandle(9, [rng.randbytes(rng.randrange(1, 300)) for _ in range(entries)]), uuid.uuid4()
    )
    (ledger,) = find_offloaded_ledgers(driver)
    plan = plan_ledger(driver, ledger)
    assert isinstance(plan, LedgerPlan) and len(plan.blocks) > 3
    return driver, plan


def test_outcomes_in_any_order_give_the_same_report() -> None:
    driver, plan = planned()
    outcomes = [read_and_check_block(driver, task) for task in plan.blocks]
    report = summarize_ledger(plan, reversed(outcomes))
    assert report.ok and report.entries == 80 and report.blocks == len(plan.blocks)
    assert pickle.loads(pickle.dumps(plan)) == plan  # plans travel to executors


def test_a_block_not_checked_is_a_defect() -> None:
    driver, plan = planned()
    outcomes = [read_and_check_block(driver, task) for task in plan.blocks[1:]]
    (defect,) = summarize_ledger(plan, outcomes).defects
    assert defect.problem == f"{len(plan.blocks) - 1} of the index's {len(plan.blocks)} blocks were checked"


def test_every_unreadable_block_is_reported_at_its_offset() -> None:
    driver, plan = planned()
    data = bytearray(driver.read(plan.ledger.data_key))
    for task in plan.blocks[1::2]:
        data[task.offset] ^= 0xFF
    driver.write(plan.ledger.data_key, bytes(data), metadata=dict(driver.stat(plan.ledger.data_key).metadata))
    report = summarize_ledger(plan, [read_and_check_block(driver, task) for task in plan.blocks])
    assert [defect.offset for defect in report.defects] == [task.offset for task in plan.blocks[1::2]]


def test_a_block_past_the_object_end_is_a_defect_not_a_crash() -> None:
    driver, plan = planned()
    driver.write(plan.ledger.data_key, driver.read(plan.ledger.data_key, 0, plan.blocks[1].offset),
                 metadata=dict(driver.stat(plan.ledger.data_key).metadata))  # fmt: skip
    outcome = read_and_check_block(driver, plan.blocks[-1])
    assert outcome.problem is not None and outcome.entries == 0
