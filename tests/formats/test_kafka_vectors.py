"""Kafka-written segments (tests/vectors/kafka): every field Kafka read back
matches ours, our index derivation reproduces its files byte for byte, and
our lookups give Kafka's answers."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from offload_core.formats import kafka
from tests.kafka_vectors import KafkaCase, b64, checkpoint_examples, kafka_cases

CASES = kafka_cases()


@pytest.fixture(params=CASES, ids=[case.name for case in CASES])
def case(request: pytest.FixtureRequest) -> KafkaCase:
    return request.param  # type: ignore[no-any-return]


def test_every_batch_field(case: KafkaCase) -> None:
    log = case.log
    batches = list(kafka.iter_batches(log))
    assert len(batches) == len(case.spec["batches"])
    for batch, expected in zip(batches, case.spec["batches"], strict=True):
        assert batch.position == expected["position"]
        assert batch.size_in_bytes == expected["size_in_bytes"]
        assert (batch.base_offset, batch.last_offset) == (expected["base_offset"], expected["last_offset"])
        assert batch.last_offset_delta == expected["last_offset_delta"]
        assert batch.record_count == expected["record_count"]
        assert batch.magic == expected["magic"]
        assert batch.partition_leader_epoch == expected["partition_leader_epoch"]
        assert batch.attributes == expected["attributes"]
        assert batch.compression == expected["compression_id"]
        assert kafka.Compression(batch.compression).name.lower() == expected["compression"]
        assert ("LogAppendTime" if batch.log_append_time else "CreateTime") == expected["timestamp_type"]
        assert batch.is_transactional == expected["is_transactional"]
        assert batch.is_control == expected["is_control"]
        assert batch.delete_horizon_ms == expected["delete_horizon_ms"]
        assert batch.crc == expected["crc"] and expected["crc_valid"]
        assert kafka.batch_crc(log[batch.position : batch.position + batch.size_in_bytes]) == expected["crc"]
        assert (batch.base_timestamp, batch.max_timestamp) == (expected["base_timestamp"], expected["max_timestamp"])
        assert (batch.producer_id, batch.producer_epoch) == (expected["producer_id"], expected["producer_epoch"])
        assert (batch.base_sequence, batch.last_sequence) == (expected["base_sequence"], expected["last_sequence"])


def test_every_record_field(case: KafkaCase) -> None:
    log = case.log
    for batch, expected in zip(kafka.iter_batches(log), case.spec["batches"], strict=True):
        records = kafka.decode_records(log[batch.position : batch.position + batch.size_in_bytes], batch)
        assert len(records) == len(expected["records"])
        for record, want in zip(records, expected["records"], strict=True):
            assert (record.offset, record.timestamp, record.sequence) == (want["offset"], want["timestamp"],
                                                                         want["sequence"])  # fmt: skip
            assert record.size_in_bytes == want["size_in_bytes"]
            assert (record.key, record.value) == (b64(want["key"]), b64(want["value"]))
            assert [(h.key, h.value) for h in record.headers] == [(h["key"], b64(h["value"])) for h in want["headers"]]


def test_uncompressed_batches_re_encode_byte_for_byte(case: KafkaCase) -> None:
    log = case.log
    for batch in kafka.iter_batches(log):
        if batch.compression != kafka.Compression.NONE:
            continue
        original = log[batch.position : batch.position + batch.size_in_bytes]
        records = kafka.decode_records(original, batch)
        again = kafka.encode_batch(records, base_offset=batch.base_offset,
                                   partition_leader_epoch=batch.partition_leader_epoch, producer_id=batch.producer_id,
                                   producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence)  # fmt: skip
        assert again == original


def test_indexes_derived_from_the_log_alone_are_kafkas(case: KafkaCase) -> None:
    derived = kafka.derive_indexes(case.log, case.spec["base_offset"],
                                   index_interval_bytes=case.spec["config"]["index.interval.bytes"])  # fmt: skip
    assert kafka.encode_offset_index(derived.offset_index, case.spec["base_offset"]) == case.file("offset_index")
    assert kafka.encode_time_index(derived.time_index, case.spec["base_offset"]) == case.file("time_index")
    assert derived.max_timestamp == case.spec["segment_largest_timestamp"]
    assert derived.next_offset == case.spec["next_segment_base_offset"]
    assert [(e.offset, e.position) for e in derived.offset_index] == [
        (e["offset"], e["position"]) for e in case.spec["offset_index"]
    ]
    assert [(e.timestamp, e.offset) for e in derived.time_index] == [
        (e["timestamp"], e["offset"]) for e in case.spec["time_index"]
    ]


def test_index_files_decode_and_re_encode(case: KafkaCase) -> None:
    base = case.spec["base_offset"]
    assert kafka.encode_offset_index(kafka.decode_offset_index(case.file("offset_index"), base), base) == case.file(
        "offset_index"
    )
    assert kafka.encode_time_index(kafka.decode_time_index(case.file("time_index"), base), base) == case.file(
        "time_index"
    )


def test_offset_lookups_are_kafkas(case: KafkaCase) -> None:
    base = case.spec["base_offset"]
    index = kafka.decode_offset_index(case.file("offset_index"), base)
    for lookup in case.spec["offset_lookups"]:
        floor = kafka.lookup_offset(index, lookup["target_offset"], base)
        assert (floor.offset, floor.position) == (lookup["index_floor_offset"], lookup["index_floor_position"])
        found = kafka.translate_offset(case.log, lookup["target_offset"], floor.position)
        assert (None if found is None else asdict(found)) == lookup["batch"]


def test_timestamp_lookups_are_kafkas(case: KafkaCase) -> None:
    base = case.spec["base_offset"]
    offsets = kafka.decode_offset_index(case.file("offset_index"), base)
    times = kafka.decode_time_index(case.file("time_index"), base)
    for lookup in case.spec["timestamp_lookups"]:
        floor = kafka.lookup_time(times, lookup["target_timestamp"], base)
        assert (floor.timestamp, floor.offset) == (lookup["index_floor_timestamp"], lookup["index_floor_offset"])
        found = kafka.find_offset_by_timestamp(case.log, offsets, times, lookup["target_timestamp"], base)
        assert (None if found is None else asdict(found)) == lookup["found"]


def test_producer_snapshot(case: KafkaCase) -> None:
    raw = case.file("producer_snapshot")
    entries = kafka.decode_producer_snapshot(raw)
    assert [asdict(e) for e in entries] == case.spec["producer_snapshot"]["entries"]
    assert kafka.encode_producer_snapshot(entries) == raw


def test_leader_epochs(case: KafkaCase) -> None:
    epochs = case.spec["leader_epochs"]
    for kind, text in (("leader_epoch_checkpoint", "checkpoint_file_text"),
                       ("rlm_leader_epoch_index", "rlm_leader_epoch_index_text")):  # fmt: skip
        raw = case.file(kind)
        assert raw.decode() == epochs[text]
        assert kafka.decode_leader_epochs(raw) == [tuple(e) for e in epochs["epoch_entries"]]
        assert kafka.encode_leader_epochs(kafka.decode_leader_epochs(raw)) == raw


@pytest.mark.parametrize("example", checkpoint_examples(), ids=lambda e: repr(e["text"]))
def test_leader_epoch_checkpoint_examples(example: dict[str, object]) -> None:
    text = str(example["text"]).encode()
    entries = [tuple(e) for e in example["epoch_entries"]]  # type: ignore[attr-defined]
    assert kafka.decode_leader_epochs(text) == entries
    assert kafka.encode_leader_epochs(entries) == text  # type: ignore[arg-type]
