"""Which payloads a segment block keeps referencing until it finishes
(one copy, when its bytes are joined) and which it copies when offered."""

from __future__ import annotations

import sys

from offload_core.formats import pulsar_v2 as v2
from offload_core.formats.kept_payloads import may_keep


class LengthLies(bytes):
    """A bytes subclass: not ``bytes`` itself, so never kept."""


def test_only_unchangeable_payloads_large_enough_on_average_are_kept() -> None:
    read = bytes(64 * 1024)
    whole = memoryview(read)
    views = [whole[at : at + 8192] for at in range(0, len(read), 8192)]
    assert may_keep([b"x" * 2000] * 3, 6000)
    assert not may_keep([b"x" * 500] * 3, 1500)  # the references would cost too much beside them
    assert may_keep(views, len(read))
    assert not may_keep(views[:3], 3 * 8192)  # three of eight: the read would be held for them
    assert may_keep(views[:4], 4 * 8192)  # half of it: at most twice what they show
    assert not may_keep([whole[at : at + 2048] for at in range(0, 65536, 2048)], 65536)  # a view costs more
    buffer = bytearray(read)
    assert not may_keep([memoryview(buffer)[:32768], memoryview(buffer)[32768:]], 65536)  # may change
    assert not may_keep([LengthLies(b"x" * 2000)] * 2, 4000)
    assert not may_keep([b"x" * 8192, whole[:8192]], 16384)  # mixed: framed when offered


def test_views_of_a_read_frame_as_bytes_do_and_the_read_is_held_only_while_kept() -> None:
    """Views of one hot-tier read are kept until their block finishes, and
    give the same block as ``bytes``; a few views of a larger read are
    copied when offered, so the grouper does not hold the read for them."""
    read = bytes(range(256)) * 256  # 64 KiB
    baseline = sys.getrefcount(read)
    whole = memoryview(read)
    views = [whole[at : at + 8192] for at in range(0, len(read), 8192)]
    kept = v2.BlockGrouper(1 << 20)
    assert kept.add_run(3, 0, views) == (8, [])
    del whole, views
    assert sys.getrefcount(read) == baseline + 1  # the views' shared buffer, held by the open block
    block = kept.finish()
    assert sys.getrefcount(read) == baseline
    framed = v2.BlockGrouper(1 << 20)
    framed.add_run(3, 0, [read[at : at + 8192] for at in range(0, len(read), 8192)])
    reference = framed.finish()
    assert block is not None and reference is not None and block.data == reference.data

    few = [memoryview(read)[:8192], memoryview(read)[8192:16384]]
    copied = v2.BlockGrouper(1 << 20)
    assert copied.add_run(3, 0, [b"first" * 1000]) == (1, [])  # the block is open: the views join it
    assert copied.add_run(3, 1, few)[0] == 2
    del few
    assert sys.getrefcount(read) == baseline
    block = copied.finish()
    assert block is not None
    assert [payload for _, payload in v2.decode_block(block.data).entries] == [
        b"first" * 1000, read[:8192], read[8192:16384],
    ]  # fmt: skip
