"""Hadoop's own MapFile classes (the jars PySpark ships) against ours:
Hadoop's ``MapFile.Reader`` reads what we write, entry for entry, and we
read what Hadoop's ``MapFile.Writer`` writes with other block sizes, index
intervals and compressions (and write the same bytes from the same syncs)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from offload_core.formats.hadoop_crc import CrcWriter
from offload_core.formats.mapfile import MapFileEncoder, decode_data, decode_index
from offload_core.formats.sequence_file import Compression, decode_header

pytestmark = pytest.mark.spark


def _entries(seed: int, count: int, largest: int) -> list[bytes]:
    rng = random.Random(seed)
    # Half random (incompressible), half runs: both zlib paths are taken.
    return [
        rng.randbytes(rng.randrange(largest)) if n % 2 else bytes([n % 256]) * rng.randrange(largest)
        for n in range(count)
    ]


def _write_ours(
    directory: Path, entries: list[bytes], compression: Compression, *, syncs: tuple[bytes, bytes], **sizes: int
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    encoder = MapFileEncoder(compression=compression, data_sync=syncs[0], index_sync=syncs[1], **sizes)
    parts = [encoder.data_header_bytes, encoder.append(-1, b"ledger metadata")]
    parts += [encoder.append(n, entry) for n, entry in enumerate(entries)]
    tail, index = encoder.finish()
    for name, content in (("data", b"".join([*parts, tail])), ("index", index)):
        (directory / name).write_bytes(content)
        crc = CrcWriter()
        crc.update(content)
        (directory / f".{name}.crc").write_bytes(crc.finish())


def _hadoop(spark: Any) -> tuple[Any, Any, Any]:
    jvm = spark._jvm
    return jvm, spark.sparkContext._gateway, jvm.org.apache.hadoop.io


def _conf(jvm: Any, compression: Compression, block_size: int, interval: int) -> Any:
    conf = jvm.org.apache.hadoop.conf.Configuration()
    conf.set("io.seqfile.compression.type", compression.value)
    conf.setInt("io.seqfile.compress.blocksize", block_size)
    conf.setInt("io.map.index.interval", interval)
    return conf


@pytest.mark.parametrize("compression", list(Compression), ids=lambda c: c.value)
def test_hadoops_mapfile_reader_reads_what_we_write(spark: Any, tmp_path: Path, compression: Compression) -> None:
    jvm, gateway, io = _hadoop(spark)
    entries = _entries(7, 700, 600)
    directory = tmp_path / "ledger"
    _write_ours(directory, entries, compression, syncs=(b"d" * 16, b"i" * 16), block_size=20_000)
    # LocalFileSystem checks the .crc files as it reads: ours must be right.
    conf = _conf(jvm, compression, 20_000, 128)
    reader = io.MapFile.Reader(jvm.org.apache.hadoop.fs.Path(directory.as_uri()), conf,
                               gateway.new_array(io.SequenceFile.Reader.Option, 0))  # fmt: skip
    try:
        value = io.BytesWritable()
        assert reader.get(io.LongWritable(-1), value) is not None
        assert bytes(value.copyBytes()) == b"ledger metadata"
        for entry_id in [*range(len(entries)), *random.Random(1).sample(range(len(entries)), 50)]:
            assert reader.get(io.LongWritable(entry_id), value) is not None, entry_id
            assert bytes(value.copyBytes()) == entries[entry_id], entry_id
        assert reader.get(io.LongWritable(len(entries)), value) is None
    finally:
        reader.close()


@pytest.mark.parametrize(
    ("compression", "block_size", "interval", "largest"),
    [
        (Compression.BLOCK, 1_000_000, 128, 6000),  # Pulsar's shipped profile, several blocks
        (Compression.BLOCK, 7_000, 16, 900),
        (Compression.RECORD, 1_000_000, 128, 3000),  # Hadoop's default, sync markers every 100 KiB
        (Compression.RECORD, 1_000_000, 5, 300),
        (Compression.NONE, 1_000_000, 64, 2000),
    ],
    ids=["block-1MB", "block-7k-i16", "record", "record-i5", "none"],
)
def test_we_read_what_hadoops_mapfile_writer_writes(
    spark: Any, tmp_path: Path, compression: Compression, block_size: int, interval: int, largest: int
) -> None:
    jvm, gateway, io = _hadoop(spark)
    entries = _entries(block_size + interval, 800, largest)
    directory = tmp_path / "hadoop"
    options = gateway.new_array(io.SequenceFile.Writer.Option, 2)
    options[0] = io.MapFile.Writer.keyClass(io.LongWritable._java_lang_class)
    options[1] = io.MapFile.Writer.valueClass(io.BytesWritable._java_lang_class)
    writer = io.MapFile.Writer(_conf(jvm, compression, block_size, interval),
                               jvm.org.apache.hadoop.fs.Path(directory.as_uri()), options)  # fmt: skip
    writer.append(io.LongWritable(-1), io.BytesWritable(bytearray(b"ledger metadata")))
    for entry_id, entry in enumerate(entries):
        writer.append(io.LongWritable(entry_id), io.BytesWritable(bytearray(entry)))
    writer.close()

    data, index = (directory / "data").read_bytes(), (directory / "index").read_bytes()
    assert decode_data(data, "data") == [(-1, b"ledger metadata"), *enumerate(entries)]
    assert decode_index(index, "index").keys[0] == -1
    if compression is Compression.BLOCK:
        assert data.count(decode_header(data)[0].sync) > 2  # several blocks
    # Same entries and the syncs Hadoop drew: the same bytes, checksums too.
    syncs = (decode_header(data)[0].sync, decode_header(index)[0].sync)
    ours = tmp_path / "ours"
    _write_ours(ours, entries, compression, syncs=syncs, block_size=block_size, index_interval=interval)
    for name in ("data", "index", ".data.crc", ".index.crc"):
        assert (ours / name).read_bytes() == (directory / name).read_bytes(), name


def test_a_topic_offloaded_with_pulsars_keys_is_read_by_hadoops_mapfile_reader(spark: Any, tmp_path: Path) -> None:
    from offload_core.managed_ledger import Broker, parse_config
    from tests.managed_ledger.test_filesystem_offloader import pulsar_profile

    base = tmp_path / "hadoop"
    config = parse_config(
        {
            "managedLedgerOffloadDriver": "filesystem",
            "fileSystemURI": "file:///",
            "fileSystemProfilePath": str(pulsar_profile(tmp_path, str(base))),
            "managedLedgerMaxEntriesPerLedger": 3000,
            "managedLedgerOffloadWorkerProcesses": 0,
            "retentionCheckIntervalInSeconds": 0,
        }
    )
    entries = _entries(11, 6001, 700)
    with Broker(tmp_path / "data", config) as broker:
        topic = broker.topic("public/default/orders")
        for entry in entries:
            topic.append(entry)
        topic.offload_prefix(topic.last_position)
        sealed = [state for state in topic.ledgers() if state.uuid]
        name = topic.name
    assert len(sealed) == 2
    jvm, gateway, io = _hadoop(spark)
    conf = jvm.org.apache.hadoop.conf.Configuration()
    for number, state in enumerate(sealed):
        directory = base / name / f"{state.ledger_id}-{state.uuid}"
        reader = io.MapFile.Reader(jvm.org.apache.hadoop.fs.Path(directory.as_uri()), conf,
                                   gateway.new_array(io.SequenceFile.Reader.Option, 0))  # fmt: skip
        try:
            value = io.BytesWritable()
            assert reader.get(io.LongWritable(-1), value) is not None  # the LedgerMetadataFormat
            for entry_id in range(3000):
                assert reader.get(io.LongWritable(entry_id), value) is not None
                assert bytes(value.copyBytes()) == entries[number * 3000 + entry_id], (number, entry_id)
            assert reader.get(io.LongWritable(3000), value) is None
        finally:
            reader.close()
