"""Room in a streamed segment's buffer reaches the pump once after each
refusal for a full buffer, never once a part: a part leaving a buffer
nobody waits on starts no pump (before, every block sent started one, at
moments nothing else in the broker knew of). Streaming a producer faster
than the store still needs no pump but the ones room notices start, and
the room is there when the notice comes (before, the notice came while
the sent part still counted, so the pump it started could be refused
again with no part left to send: the stream stalled)."""

from __future__ import annotations

from typing import Any

import pytest

from offload_core.memory import MemoryDriver
from offload_core.offload import BlobStoreLedgerOffloader, OfferResult, OffloadHandle, SegmentLimits
from offload_core.offload.segments.room_notices import RoomNotices
from tests.managed_ledger.conftest import GatedStore
from tests.managed_ledger.test_streaming import STREAMING, TOPIC, payload, produce
from tests.offload.test_streaming_offload import wait_for

REFUSED = (0, OfferResult.FAIL_BUFFER_FULL)


def test_parts_leaving_a_buffer_nobody_waits_on_tell_nobody() -> None:
    notices: list[int] = []
    room = RoomNotices(lambda: notices.append(1))
    assert room.offer(lambda: (5, OfferResult.SUCCESS)) == (5, OfferResult.SUCCESS)
    room.part_sent()
    room.part_sent()
    assert notices == []


@pytest.mark.parametrize("during", [False, True], ids=["after the refusal", "during the refused offer"])
def test_room_is_told_once_after_each_refusal_and_never_missed(during: bool) -> None:
    notices: list[int] = []
    room = RoomNotices(lambda: notices.append(1))

    def refused() -> tuple[int, OfferResult]:
        if during:
            room.part_sent()
        return REFUSED

    assert room.offer(refused) == REFUSED
    if not during:
        assert notices == []
        room.part_sent()
    assert notices == [1]
    room.part_sent()
    assert notices == [1]  # once per refusal
    assert room.offer(lambda: REFUSED) == REFUSED
    room.part_sent()
    assert notices == [1, 1]


def test_room_is_told_once_the_part_sent_has_left_the_buffer() -> None:
    buffered_when_told: list[int] = []
    handles: list[OffloadHandle] = []
    offloader = BlobStoreLedgerOffloader(MemoryDriver(), max_block_size=4096)
    limits = SegmentLimits(streaming_block_size=4096)
    handle = offloader.streaming_offload("room", limits=limits, on_room=lambda: buffered_when_told.append(
        handles[0].buffered_bytes))  # fmt: skip
    handles.append(handle)
    assert handle.offer_run(1, 0, [b"x" * 1000]) == (1, OfferResult.SUCCESS)
    handle.close()  # the segment's one block goes to the upload
    assert handle.result(10) is not None
    assert buffered_when_told == [0]  # the block's bytes before


def test_an_in_process_segment_sending_its_parts_starts_no_pump(make_broker: Any) -> None:
    broker = make_broker(**STREAMING)
    ledger = broker.topic(TOPIC)
    told: list[int] = []
    real = ledger._segment_has_room

    def has_room() -> None:
        told.append(1)
        real()

    ledger._segment_has_room = has_room  # before the segment opens and takes it
    produce(broker, 90, size=1000)  # 4 KB blocks: some twenty parts
    assert ledger.complete_current_segment().status == "success"
    (segment,) = ledger.segments()
    assert [(first, last) for _, first, last in segment.ledgers] == [(0, 89)]
    assert told == []


def test_a_producer_faster_than_the_store_is_streamed_by_room_notices_alone(make_broker: Any) -> None:
    gated = GatedStore()
    broker = make_broker(managedLedgerOffloadDriver="gated", managedLedgerOffloadStreamingEnabled=True,
                         managedLedgerOffloadStreamingBufferSizeInBytes=2 * 4096)  # two 4 KB blocks  # fmt: skip
    broker.plugins.register(gated)
    gated.parts.clear()  # the store takes no part for now
    ledger = broker.topic(TOPIC)
    for n in range(60):
        ledger.append(payload(n, 1000))
    assert broker.drain(30)
    handle = ledger._segment
    assert handle is not None
    ledger_id = ledger.ledgers()[0].ledger_id
    refused_at = handle.last_offered()
    assert refused_at is not None and refused_at < (ledger_id, 59)
    room = ledger._segment_room
    assert room is not None and room.waiting  # the buffer is full: an offer was refused
    gated.parts.set()  # parts go again: each room notice starts the pump that goes on
    wait_for(lambda: handle.last_offered() == (ledger_id, 59), timeout=30)
    assert ledger.complete_current_segment().status == "success"
    (segment,) = ledger.segments()
    assert [(first, last) for _, first, last in segment.ledgers] == [(0, 59)]
