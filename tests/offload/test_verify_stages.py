"""verify's stages (plan, check each block, summarize) combine blocks checked in any order."""

from __future__ import annotations

import pickle
import random
import uuid

from offload_core import InMemoryReadHandle
from offload_core.memory import MemoryDriver
from offload_core.offload import BlobStoreLedgerOffloader
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from offload_core.offload.ledgers.verify import LedgerPlan, plan_ledger, read_and_check_block, summarize_ledger


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
    defect, summary = summarize_ledger(plan, outcomes).defects
    assert defect.problem == f"{len(plan.blocks) - 1} of the index's {len(plan.blocks)} blocks were checked"
    assert summary.problem == "no entry is recoverable, lost 0..79"


def test_every_unreadable_block_is_reported_at_its_offset() -> None:
    driver, plan = planned()
    data = bytearray(driver.read(plan.ledger.data_key))
    for task in plan.blocks[1::2]:
        data[task.offset] ^= 0xFF
    driver.write(plan.ledger.data_key, bytes(data), metadata=dict(driver.stat(plan.ledger.data_key).metadata))
    report = summarize_ledger(plan, [read_and_check_block(driver, task) for task in plan.blocks])
    *blocks, summary = report.defects
    assert [defect.offset for defect in blocks] == [task.offset for task in plan.blocks[1::2]]
    assert (
        summary.problem == f"recoverable entries 0..{plan.blocks[1].first_entry_id - 1}, lost "
        f"{plan.blocks[1].first_entry_id}..79"
    )


def test_a_block_past_the_object_end_is_a_defect_not_a_crash() -> None:
    driver, plan = planned()
    driver.write(plan.ledger.data_key, driver.read(plan.ledger.data_key, 0, plan.blocks[1].offset),
                 metadata=dict(driver.stat(plan.ledger.data_key).metadata))  # fmt: skip
    outcome = read_and_check_block(driver, plan.blocks[-1])
    assert outcome.problem is not None and outcome.entries == 0


def test_a_damaged_entry_keeps_the_entries_before_it_recoverable() -> None:
    driver, plan = planned()
    second = plan.blocks[1]
    data = bytearray(driver.read(plan.ledger.data_key))
    # Entry second.first + 2's length field: the two entries before it stay intact.
    position = second.offset + 128
    for _ in range(2):
        position += 12 + int.from_bytes(data[position : position + 4], "big")
    data[position : position + 4] = (10**6).to_bytes(4, "big")
    driver.write(plan.ledger.data_key, bytes(data), metadata=dict(driver.stat(plan.ledger.data_key).metadata))
    report = summarize_ledger(plan, [read_and_check_block(driver, task) for task in plan.blocks])
    assert report.defects[-1].problem == (
        f"recoverable entries 0..{second.first_entry_id + 1}, lost {second.first_entry_id + 2}..79"
    )


def test_a_damaged_length_field_is_blamed_on_its_own_entry() -> None:
    driver, plan = planned()
    first = plan.blocks[0]
    data = bytearray(driver.read(plan.ledger.data_key))
    entry_one = first.offset + 128 + 12 + int.from_bytes(data[first.offset + 128 : first.offset + 132], "big")
    data[entry_one : entry_one + 4] = (7).to_bytes(4, "big")  # entry 1's length, made shorter
    driver.write(plan.ledger.data_key, bytes(data), metadata=dict(driver.stat(plan.ledger.data_key).metadata))
    outcome = read_and_check_block(driver, first)
    assert outcome.problem is not None
    assert outcome.problem.startswith(
        f"block offset {entry_one - first.offset}: entry 1's length (7) does not frame it"
    )
    assert outcome.last_entry_id == 0  # entry 0 stays recoverable
