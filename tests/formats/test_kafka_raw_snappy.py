"""Raw (unframed) snappy, as librdkafka-based producers write it: Kafka
reads it because snappy-java's SnappyInputStream falls back to one raw
block when the xerial header is absent, so we read it too."""

from __future__ import annotations

import cramjam
import pytest

from offload_core.errors import FormatError
from offload_core.formats import kafka
from tests.kafka_vectors import b64, kafka_cases
from tests.rsm.segments import recompressed

CASES = kafka_cases()


def raw_snappy(data: bytes) -> bytes:
    return bytes(cramjam.snappy.compress_raw(data))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_raw_snappy_batches_read_record_for_record(case) -> None:
    log = b"".join(recompressed(case.log, kafka.Compression.SNAPPY, raw_snappy))
    batches = list(kafka.iter_batches(log))
    assert all(b.compression == kafka.Compression.SNAPPY for b in batches)
    for batch, expected in zip(batches, case.spec["batches"], strict=True):
        records = kafka.decode_records(log[batch.position : batch.position + batch.size_in_bytes], batch)
        assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == [
            (w["offset"], w["timestamp"], b64(w["key"]), b64(w["value"])) for w in expected["records"]
        ]
        assert [[(h.key, h.value) for h in r.headers] for r in records] == [
            [(h["key"], b64(h["value"])) for h in w["headers"]] for w in expected["records"]
        ]


def test_raw_and_xerial_snappy_decode_alike_and_raw_is_bounded() -> None:
    data = bytes(range(256)) * 400
    assert kafka.decompress(kafka.Compression.SNAPPY, raw_snappy(data)) == data
    assert kafka.decompress(kafka.Compression.SNAPPY, raw_snappy(b"tiny")) == b"tiny"  # shorter than a xerial header
    assert kafka.decompress(kafka.Compression.SNAPPY, kafka.compress(kafka.Compression.SNAPPY, data)) == data
    with pytest.raises(FormatError, match="expand past"):
        kafka.decompress(kafka.Compression.SNAPPY, raw_snappy(data), limit=1000)
    with pytest.raises(FormatError, match="snappy record data is damaged"):
        kafka.decompress(kafka.Compression.SNAPPY, b"\xff\xff\xff\xff\xff\xff not snappy at all")
