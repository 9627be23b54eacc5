"""Feed every byte-format parser mutated input; only FormatError may come out.

Run as ``python -m tests.reliability.mutate COUNT SEED`` (the test does,
under an address-space limit, so "memory bounded" is enforced, not hoped
for). Prints one JSON object: per parser, how many inputs it was fed and
what came out; any other exception is listed with the input that raised it.
"""

from __future__ import annotations

import json
import logging
import random
import resource
import struct
import sys
import uuid
from collections import Counter
from collections.abc import Callable

from offload_core import BlobStoreLedgerOffloader, FormatError, InMemoryReadHandle
from offload_core.formats import pulsar_message as pm
from offload_core.formats import pulsar_v1 as v1
from offload_core.memory import MemoryDriver
from offload_core.offload.ledgers.verify import BlockTask, check_block
from offload_core.proto import MessageMetadata, SingleMessageMetadata

SPECIAL = [0, -1, 2**31 - 1, 2**63 - 1, -(2**31), 1, 128, 0x7F]
MEMORY_LIMIT = 1536 * 2**20


def seeds(rng: random.Random) -> dict[str, list[bytes]]:
    entries = [rng.randbytes(rng.choice([0, 5, 40, 300])) for _ in range(60)]
    driver = MemoryDriver()
    BlobStoreLedgerOffloader(driver, max_block_size=1024).offload(InMemoryReadHandle(3, entries), uuid.UUID(int=7))
    data = driver.read(v1.data_key(str(uuid.UUID(int=7)), 3))
    index = driver.read(v1.index_key(str(uuid.UUID(int=7)), 3))
    blocks = [data[row.offset : v1.decode_index(index).block_end(row)] for row in v1.decode_index(index).entries]
    single = pm.encode_entry(MessageMetadata(producer_name="p", sequence_id=1, publish_time=2, partition_key="k"),
                             b"value")  # fmt: skip
    batch_payload = pm.encode_batch_payload(
        [
            (SingleMessageMetadata(payload_size=3, partition_key="a"), b"one"),
            (SingleMessageMetadata(payload_size=0), b""),
        ]
    )
    batched = pm.encode_entry(MessageMetadata(producer_name="p", sequence_id=1, publish_time=2,
                                              num_messages_in_batch=2), batch_payload)  # fmt: skip
    return {"block": blocks, "index": [index], "entry": [single, batched], "object": [data]}


def mutate(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    kind = rng.randrange(5)
    if kind == 0 and out:  # bit flips
        for _ in range(rng.randint(1, 3)):
            bit = rng.randrange(len(out) * 8)
            out[bit // 8] ^= 1 << (bit % 8)
    elif kind == 1:  # truncation
        del out[rng.randrange(len(out) + 1) :]
    elif kind == 2:  # extension
        out += rng.randbytes(rng.choice([1, 4, 12, 200]))
    elif kind == 3 and len(out) >= 4:  # a 32-bit length field set to a special value
        at = rng.randrange(len(out) - 3)
        struct.pack_into(">i", out, at, rng.choice([0, -1, 2**31 - 1, -(2**31), 1, 128, 7]))
    elif len(out) >= 8:  # a 64-bit field set to a special value
        at = rng.randrange(len(out) - 7)
        struct.pack_into(">q", out, at, rng.choice(SPECIAL))
    return bytes(out)


def read_object(data: bytes, index: bytes) -> None:
    driver = MemoryDriver()
    key = str(uuid.UUID(int=7))
    driver.write(v1.data_key(key, 3), data, metadata={v1.FORMAT_VERSION_KEY: "1"})
    driver.write(v1.index_key(key, 3), index, metadata={v1.FORMAT_VERSION_KEY: "1"})
    handle = BlobStoreLedgerOffloader(driver, read_buffer_size=512).read_offloaded(3, key)
    for entry_id in range(0, handle.last_entry_id + 1, 7):
        handle.read(entry_id, min(entry_id + 6, handle.last_entry_id))


def checked_block(data: bytes) -> None:
    outcome = check_block(BlockTask(3, "u", "k", 1, 0, len(data), 0), data)
    if outcome.problem is None and outcome.entries < 0:
        raise AssertionError("a block outcome without a problem has entries")


def main(count: int, seed: int) -> dict[str, dict[str, object]]:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    logging.disable(logging.WARNING)  # a size mismatch logs a warning per input; the outcome is what counts
    rng = random.Random(seed)
    inputs = seeds(rng)
    index = inputs["index"][0]
    parsers: dict[str, tuple[str, Callable[[bytes], object]]] = {
        "v1 block header": ("block", v1.decode_block_header),
        "v1 block": ("block", v1.decode_block),
        "v1 index": ("index", v1.decode_index),
        "pulsar message entry": ("entry", pm.decode_entry),
        "offloaded read path (data object)": ("object", lambda data: read_object(data, index)),
        "offloaded read path (index object)": ("index", lambda mutated: read_object(inputs["object"][0], mutated)),
        "verify's block check": ("block", checked_block),
    }
    report: dict[str, dict[str, object]] = {}
    for name, (kind, parse) in parsers.items():
        outcomes: Counter[str] = Counter()
        unexpected: list[str] = []
        share = count // 4 if name.startswith("offloaded") else count  # the read path costs more per input
        for _ in range(share):
            data = mutate(rng, rng.choice(inputs[kind]))
            try:
                parse(data)
                outcomes["accepted"] += 1
            except FormatError as exc:
                outcomes[type(exc).__name__] += 1
            except Exception as exc:  # noqa: BLE001 - the finding this campaign is for
                outcomes["unexpected"] += 1
                if len(unexpected) < 5:
                    unexpected.append(f"{type(exc).__name__}: {exc} on {data[:64].hex()}")
        report[name] = {"inputs": share, "outcomes": dict(outcomes), "unexpected": unexpected}
    return report


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
