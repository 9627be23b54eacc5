"""Reading a segment in Aiven's tiered-storage layout (zstd and AES-256-GCM
per chunk) against our own layout's cold read of the same segment, on S3
(moto's server) at 100 ms to first byte, measured in one run:

* cold sequential fetch of the whole ``.log``, read-ahead on (the same pool
  settings for both): MB/s of the Aiven layout / MB/s of ours (goal >= 0.8);
* the Aiven read's amplification: bytes fetched from the ``.log`` object /
  its stored size (goal <= 1.05).

The Aiven objects are made here with the pure encoders of
``offload_core.rsm.aiven`` (the chunk transforms, chunk index and manifest
the reader is checked against the plugin's own objects with), from a
segment as ``bench_rsm.py`` writes it but with every batch of fresh random
records, so zstd cannot shrink the Aiven ``.log`` below ours; our layout's
by ``copy_log_segment``. Both ``.log`` objects then hold the same bytes
(to the chunks' tags), and are fetched in as many GETs: moto answers each
ranged GET by reading its whole object under a per-object lock, so the
time per GET grows with the object and concurrent GETs of one object queue
(see bench/README.md).

Run: ``.venv/bin/python bench/bench_aiven.py`` (``--mib`` sets the size).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench_rsm import write_segment
from Cryptodome.Cipher import PKCS1_OAEP
from Cryptodome.Hash import SHA3_512
from Cryptodome.PublicKey import RSA
from Cryptodome.Signature.pss import MGF1

from offload_core.instrument import InstrumentedDriver
from offload_core.offload.reading.read_ahead import ReadAheadPool
from offload_core.rsm import RemoteStorageManager, TopicIdPartition, TopicPartition
from offload_core.rsm.aiven.chunk_index import VariableChunkIndex
from offload_core.rsm.aiven.chunk_transforms import ChunkTransform, encode_chunk
from offload_core.rsm.aiven.keys import ObjectKey
from offload_core.rsm.aiven.manifest import Encryption, IndexKind, IndexPlace, SegmentManifest, encode_manifest
from offload_core.rsm.aiven.storage import AivenRemoteStorage
from offload_core.rsm.types import LogSegmentData
from offload_core.storage import StorageDriver
from offload_core.testing.faults import Latency, SlowDriver

MiB = 2**20
TOPIC_ID = "5fEBmixCR5-dMntYSLIr1g"
SEGMENT_ID = "BenchAivenSegmentAAAAA"
KEY_PAIR = "bench-key"


def put_aiven_segment(
    driver: StorageDriver, data: LogSegmentData, chunk_size: int, end_offset: int, public: RSA.RsaKey
) -> int:
    """The segment's three objects as the plugin stores them with zstd and
    encryption on; returns the stored size of its ``.log``."""
    data_key, aad = os.urandom(32), os.urandom(32)
    transform = ChunkTransform(True, data_key, aad)
    log = data.log_segment.read_bytes()
    stored = [encode_chunk(log[at : at + chunk_size], transform, iv=os.urandom(12))
              for at in range(0, len(log), chunk_size)]  # fmt: skip
    key = ObjectKey("", "orders", TOPIC_ID, 0, 0, SEGMENT_ID, "log")
    driver.write(key.key, stored, metadata={})
    indexes = [data.offset_index.read_bytes(), data.time_index.read_bytes(),
               data.producer_snapshot_index.read_bytes(), data.leader_epoch_index]  # fmt: skip
    only_encrypted = ChunkTransform(False, data_key, aad)
    stored_indexes = [encode_chunk(index, only_encrypted, iv=os.urandom(12)) if index else b"" for index in indexes]
    places: dict[IndexKind, IndexPlace | None] = {IndexKind.TRANSACTION: None}
    position = 0
    for kind, piece in zip(list(IndexKind)[:4], stored_indexes, strict=True):
        places[kind] = IndexPlace(position, len(piece))
        position += len(piece)
    driver.write(key.with_suffix("indexes").key, [b"".join(stored_indexes)], metadata={})
    wrap = PKCS1_OAEP.new(public, hashAlgo=SHA3_512, mgfunc=lambda seed, size: MGF1(seed, size, SHA3_512))  # type: ignore[arg-type]
    metadata = {"remoteLogSegmentId": {"topicIdPartition": {"topicId": TOPIC_ID,
                                                            "topicPartition": {"topic": "orders", "partition": 0}},
                                       "id": SEGMENT_ID},
                "startOffset": 0, "endOffset": end_offset, "maxTimestampMs": 1_700_000_000_000, "brokerId": 1,
                "eventTimestampMs": 1_700_000_100_000, "segmentLeaderEpochs": {"0": 0}}  # fmt: skip
    manifest = SegmentManifest(VariableChunkIndex(chunk_size, len(log), tuple(len(chunk) for chunk in stored)),
                               places, True, Encryption(KEY_PAIR, wrap.encrypt(data_key), aad), metadata)  # fmt: skip
    driver.write(key.with_suffix("rsm-manifest").key, [encode_manifest(manifest)], metadata={})
    return sum(len(chunk) for chunk in stored)


def cold_read(s3: StorageDriver, layout: str, latency: float, keys: dict[str, bytes]) -> tuple[float, int, int]:
    """Seconds to fetch the whole ``.log`` of the segment in ``layout`` cold
    (manifest and key read first, untimed), and the bytes and GETs fetched for it."""
    pool = ReadAheadPool(total_bytes=128 * MiB, reader_bytes=64 * MiB, range_size=16 * MiB, workers=8)
    slow = InstrumentedDriver(SlowDriver(s3, Latency(latency)))
    source: RemoteStorageManager | AivenRemoteStorage
    if layout == "ours":
        source = RemoteStorageManager(slow, prefix="ours", buffer_size=MiB, read_ahead=pool)
        (segment,) = source.list_remote_segments(TopicIdPartition(TOPIC_ID, TopicPartition("orders", 0)))
        source.manifest(segment)
    else:
        source = AivenRemoteStorage(slow, private_keys=keys, buffer_size=MiB, read_ahead=pool)
        (segment,) = source.list_remote_segments(TopicIdPartition(TOPIC_ID, TopicPartition("orders", 0)))
        source.reader(segment)
    before = slow.counts
    started = time.perf_counter()
    with source.fetch_log_segment(segment, 0) as stream:
        while stream.read(MiB):
            pass
    seconds = time.perf_counter() - started
    fetched = slow.counts.since(before)
    pool.close()
    return seconds, fetched.bytes_read, fetched.requests["read"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=256, help="segment size")
    parser.add_argument("--chunk-mib", type=int, default=4, help="the plugin's chunk.size")
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from offload_driver_s3 import S3Driver

    from tests.emulators import MotoS3

    server = MotoS3.start()
    try:
        server.create_bucket("bench")
        s3 = S3Driver("bench", **server.client_options())
        with tempfile.TemporaryDirectory() as root:
            source = Path(root) / "orders-0"
            source.mkdir()
            data, size = write_segment(source, args.mib * MiB, distinct=True)
            tp = TopicIdPartition(TOPIC_ID, TopicPartition("orders", 0))
            end_offset = int(data.producer_snapshot_index.name[:20]) - 1
            RemoteStorageManager(s3, prefix="ours").copy_log_segment(tp, data)
            pair = RSA.generate(2048)
            stored = put_aiven_segment(s3, data, args.chunk_mib * MiB, end_offset, pair.publickey())
        keys = {KEY_PAIR: pair.export_key()}
        ours_seconds, aiven_seconds, amplification = [], [], []
        gets = {}
        for _ in range(args.repeat):  # alternated: the VM runs at two speeds for seconds at a time
            for layout in ("ours", "aiven"):
                seconds, fetched, gets[layout] = cold_read(s3, layout, args.latency, keys)
                (ours_seconds if layout == "ours" else aiven_seconds).append(seconds)
                if layout == "aiven":
                    amplification.append(fetched / stored)
    finally:
        server.stop()
    ours, aiven = statistics.median(ours_seconds), statistics.median(aiven_seconds)
    print(f"\nAiven layout (zstd + AES-GCM, {args.chunk_mib} MiB chunks) vs ours, a {size / MiB:.0f} MiB segment "
          f"on S3 (moto) at {args.latency * 1000:.0f} ms to first byte, read-ahead")  # fmt: skip
    print(f"  stored .log MiB: ours {size / MiB:.1f}, aiven {stored / MiB:.1f}; "
          f"GETs of it: ours {gets['ours']}, aiven {gets['aiven']}")  # fmt: skip
    print(f"  cold fetch MB/s: ours {size / ours / 1e6:.1f}, aiven {size / aiven / 1e6:.1f}")
    print(f"  aiven / ours (throughput)                                   {ours / aiven:9.3f}  >= 0.8")
    print(f"  aiven read amplification (.log bytes fetched / stored)      {max(amplification):9.3f}  <= 1.05")


if __name__ == "__main__":
    main()
