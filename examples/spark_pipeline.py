"""The Spark side end to end: backfill a topic of Pulsar messages, query it
as a DataFrame, verify the bucket, and see what retention would delete.

Produces batched Pulsar messages (``MessageMetadata`` framing, as brokers
store them) to ``orders/eu/checkout`` in ``<data-dir>``, offloads every
sealed ledger in parallel with the backfill job, reads the bucket with the
``pulsar-offload`` source (one row per message, keys and properties
decoded), then runs verify and a retention dry run. Needs
``offload-core[spark]`` and Java 17.
"""

from __future__ import annotations

import argparse
import shutil
import struct
from datetime import UTC, datetime
from pathlib import Path

from offload_core.managed_ledger import Broker, SqliteMetadataStore, parse_config
from offload_core.proto import MessageMetadata, PulsarApi_pb2, SingleMessageMetadata
from offload_core.spark import backfill, get_session, retention, verify_store

TOPIC = "orders/eu/checkout"
COUNTRIES = ("de", "fr", "it", "nl", "es")


def batch_entry(batch: int, size: int) -> bytes:
    """One entry holding ``size`` messages, as a Pulsar producer batches them."""
    payload = b""
    for index in range(size):
        body = f'{{"order": {batch * size + index}, "cents": {(batch * 7919 + index) % 10_000}}}'.encode()
        single = SingleMessageMetadata(
            payload_size=len(body),
            partition_key=COUNTRIES[(batch + index) % len(COUNTRIES)],
            properties=[PulsarApi_pb2.KeyValue(key="source", value="web" if index % 3 else "app")],
        )
        serialized = single.SerializeToString()
        payload += struct.pack(">I", len(serialized)) + serialized + body
    metadata = MessageMetadata(
        producer_name="checkout-service",
        sequence_id=batch * size,
        publish_time=1_763_800_000_000 + batch,
        num_messages_in_batch=size,
    ).SerializeToString()
    return struct.pack(">I", len(metadata)) + metadata + payload


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="offload-data/spark-pipeline")
    parser.add_argument("--batches", type=int, default=2000)
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    args = parser.parse_args()
    data = Path(args.data_dir).resolve()
    shutil.rmtree(data, ignore_errors=True)
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 250})

    with Broker(data, config) as broker:
        ledger = broker.topic(TOPIC)
        for batch in range(args.batches):
            ledger.append(batch_entry(batch, 10))
    print(f"produced {args.batches * 10} messages in {args.batches} batched entries to {TOPIC}")

    spark = get_session(args.master)
    spark.sparkContext.setLogLevel("ERROR")
    result = backfill(spark, data, config=config)
    print(f"backfill: {len(result.offloaded)} ledgers offloaded, {len(result.failed)} failed")

    bucket = f"file://{data / 'bucket'}"
    messages = spark.read.format("pulsar-offload").load(bucket)
    print(f"pulsar-offload: {messages.count()} messages")
    messages.groupBy("key").count().orderBy("key").show()
    messages.where("properties['source'] = 'app'").selectExpr("count(*) AS from_app").show()

    verified = verify_store(spark, bucket)
    print(f"verify: {len(verified.reports)} ledgers, {verified.defects.count()} defects")

    store = SqliteMetadataStore(data / "metadata.db")
    try:
        plan = retention(spark, bucket, cutoff=datetime(2100, 1, 1, tzinfo=UTC), metadata=store)
    finally:
        store.close()
    kept = sum(1 for decision in plan.decisions if decision.action == "keep")
    print(f"retention (dry run): {kept} ledgers kept (referenced by the topic), {len(plan.orphans)} orphans")
    spark.stop()


if __name__ == "__main__":
    main()
