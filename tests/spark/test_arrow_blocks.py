"""Undecoded entries of a block straight into Arrow (no Spark session)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offload_core.errors import FormatError
from offload_core.formats import pulsar_v1 as v1
from offload_core.formats import pulsar_v2 as v2
from offload_core.spark.arrow_blocks import entry_batches
from offload_core.spark.column_bounds import ANY_VALUE, ColumnBounds

pa = pytest.importorskip("pyarrow")
types = pytest.importorskip("pyspark.sql.pandas.types")
from offload_core.spark.source import SCHEMA  # noqa: E402  (needs pyspark, skipped above without it)

ARROW_SCHEMA = types.to_arrow_schema(SCHEMA, timezone="UTC")
PAYLOADS = [random.Random(9).randbytes(n * 7 % 300) for n in range(60)]
FIRST = 1000


def block() -> bytes:
    size = v1.BLOCK_HEADER_LENGTH + sum(12 + len(p) for p in PAYLOADS) + 40  # some padding after the entries
    return v1.encode_block(FIRST, size, PAYLOADS)


def rows(batches: list[object]) -> list[dict[str, object]]:
    return [row for batch in batches for row in batch.to_pylist()]  # type: ignore[attr-defined]


def lengths_of(payloads: list[bytes]) -> bytes:
    """What planning ships from an entry-offsets section: big-endian uint32s."""
    return b"".join(len(p).to_bytes(4, "big") for p in payloads)


@pytest.mark.parametrize("known", [False, True], ids=["walked", "from entry offsets"])
def test_every_entry_once_with_null_message_columns(known: bool) -> None:
    lengths = lengths_of(PAYLOADS) if known else None
    got = rows(list(entry_batches(7, block(), FIRST, wanted=((0, None),), bounds=ANY_VALUE, schema=ARROW_SCHEMA,
                                  max_rows=1000, entry_lengths=lengths)))  # fmt: skip
    assert [(r["ledger_id"], r["entry_id"], r["payload"]) for r in got] == [
        (7, FIRST + n, payload) for n, payload in enumerate(PAYLOADS)
    ]
    assert all(r["publish_time"] is None and r["properties"] is None for r in got)


def test_ranges_and_bounds_keep_exactly_the_entries_they_admit() -> None:
    wanted = ((FIRST + 5, FIRST + 9), (FIRST + 40, None))
    bounds = ColumnBounds(high=FIRST + 50).one_of(frozenset(range(FIRST, FIRST + 60, 2)))
    got = rows(list(entry_batches(7, block(), FIRST, wanted=wanted, bounds=bounds, schema=ARROW_SCHEMA,
                                  max_rows=1000)))  # fmt: skip
    expected = [e for e in range(FIRST, FIRST + 60) if (e <= FIRST + 9 and e >= FIRST + 5 or e >= FIRST + 40)
                and bounds.admits(e)]  # fmt: skip
    assert [r["entry_id"] for r in got] == expected
    assert [r["payload"] for r in got] == [PAYLOADS[e - FIRST] for e in expected]


def test_a_column_subset_in_any_order_and_batches_of_at_most_max_rows() -> None:
    subset = pa.schema([ARROW_SCHEMA.field("payload"), ARROW_SCHEMA.field("entry_id")])
    batches = list(entry_batches(7, block(), FIRST, wanted=((0, None),), bounds=ANY_VALUE, schema=subset, max_rows=25))
    assert [batch.num_rows for batch in batches] == [25, 25, 10]
    assert all(batch.schema.names == ["payload", "entry_id"] for batch in batches)
    assert [r["payload"] for r in rows(batches)] == PAYLOADS


def test_streaming_blocks_frame_entries_alike() -> None:
    (encoded,) = [b for b in v2.encode_segment_blocks([(4, FIRST + n, p) for n, p in enumerate(PAYLOADS)],
                                                     streaming_block_size=1 << 20)]  # fmt: skip
    got = rows(list(entry_batches(4, bytes(encoded.data), FIRST, wanted=((0, None),), bounds=ANY_VALUE,
                                  schema=ARROW_SCHEMA, max_rows=1000)))  # fmt: skip
    assert [r["payload"] for r in got] == PAYLOADS


@pytest.mark.parametrize("known", [False, True], ids=["walked", "from entry offsets"])
@pytest.mark.parametrize("where", ["length", "id", "padding"])
def test_broken_framing_raises_format_error(where: str, known: bool) -> None:
    data = bytearray(block())
    second = v1.BLOCK_HEADER_LENGTH + 12 + len(PAYLOADS[0])
    if where == "length":
        data[second : second + 4] = (10**6).to_bytes(4, "big")
    elif where == "id":
        data[second + 4 : second + 12] = (5).to_bytes(8, "big")
    else:
        data[-3] ^= 0xFF
    with pytest.raises(FormatError, match="block offset"):
        list(entry_batches(7, bytes(data), FIRST, wanted=((0, None),), bounds=ANY_VALUE, schema=ARROW_SCHEMA,
                           max_rows=1000, entry_lengths=lengths_of(PAYLOADS) if known else None))  # fmt: skip


@pytest.mark.parametrize(
    "lengths",
    [lengths_of(PAYLOADS[:-1]), lengths_of([*PAYLOADS[:-1], PAYLOADS[-1] + b"x"]), lengths_of(PAYLOADS[1:]),
     b"\xff\xff\xff\xff" * 60, b""],
    ids=["one short", "last too long", "shifted", "over 2^31", "none"],
)  # fmt: skip
def test_lengths_that_do_not_frame_a_sound_block_are_set_aside(lengths: bytes) -> None:
    got = rows(list(entry_batches(7, block(), FIRST, wanted=((0, None),), bounds=ANY_VALUE, schema=ARROW_SCHEMA,
                                  max_rows=1000, entry_lengths=lengths)))  # fmt: skip
    assert [r["payload"] for r in got] == PAYLOADS


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=200), min_size=1, max_size=40), st.integers(0, 60), st.data())
def test_from_entry_offsets_or_walked_the_rows_are_the_same(
    payloads: list[bytes], padding: int, data: st.DataObject
) -> None:
    """Whatever a byte of the block is flipped to, locating entries from
    their lengths gives what walking gives: the same rows, or a FormatError."""
    size = v1.BLOCK_HEADER_LENGTH + sum(12 + len(p) for p in payloads) + padding
    encoded = bytearray(v1.encode_block(FIRST, size, payloads))
    if data.draw(st.booleans()):
        at = data.draw(st.integers(v1.BLOCK_HEADER_LENGTH, len(encoded) - 1))
        encoded[at] ^= data.draw(st.integers(1, 255))

    def outcome(lengths: bytes | None) -> object:
        try:
            return rows(list(entry_batches(7, bytes(encoded), FIRST, wanted=((0, None),), bounds=ANY_VALUE,
                                           schema=ARROW_SCHEMA, max_rows=1000, entry_lengths=lengths)))  # fmt: skip
        except FormatError as exc:
            return str(exc)

    assert outcome(lengths_of(payloads)) == outcome(None)


def test_planning_ships_the_entry_lengths_of_our_objects_only(tmp_path: object) -> None:
    import uuid

    from offload_core import InMemoryReadHandle, open_offloader
    from offload_core.spark.pulsar_offload import plan_partitions

    ours, pulsars = f"file://{tmp_path}/ours", f"file://{tmp_path}/pulsars"
    open_offloader(ours, max_block_size=4096).offload(InMemoryReadHandle(3, PAYLOADS), uuid.uuid4())
    open_offloader(pulsars, max_block_size=4096, entry_offsets=False).offload(InMemoryReadHandle(3, PAYLOADS),
                                                                              uuid.uuid4())  # fmt: skip
    (partition,) = plan_partitions({"path": ours, "blocksPerPartition": "100"})
    assert len(partition.entry_lengths) == len(partition.blocks) > 1
    assert b"".join(length or b"" for length in partition.entry_lengths) == lengths_of(PAYLOADS)
    (walked,) = plan_partitions({"path": pulsars, "blocksPerPartition": "100"})
    assert set(walked.entry_lengths) == {None}


@pytest.mark.parametrize("arrow", [True, False])
def test_a_block_the_index_misnames_is_refused_naming_object_and_offset_once(tmp_path: object, arrow: bool) -> None:
    import uuid
    from dataclasses import replace

    from offload_core import InMemoryReadHandle, open_offloader
    from offload_core.spark.pulsar_offload import plan_partitions, read_partition, read_partition_batches
    from offload_core.spark.read_options import Decode
    from offload_core.spark.store_tasks import Store
    from tests.spark.planned_blocks import block_partitions

    url = f"file://{tmp_path}/bucket"
    open_offloader(url, max_block_size=4096).offload(InMemoryReadHandle(3, PAYLOADS), uuid.uuid4())
    (partition,) = block_partitions(url, plan_partitions({"path": url}))
    offset, end, first = partition.blocks[1]
    wrong = replace(partition, blocks=(partition.blocks[0], (offset, end, first + 1)),
                    entry_lengths=partition.entry_lengths[:2])  # fmt: skip
    with pytest.raises(FormatError) as caught:
        if arrow:
            list(read_partition_batches(Store.of(url), wrong, ARROW_SCHEMA, 1000))
        else:
            list(read_partition(Store.of(url), wrong, Decode.NONE))
    message = str(caught.value)
    assert message.count(" at byte ") == 1 and f"{partition.data_key} at byte {offset}: block header says" in message
