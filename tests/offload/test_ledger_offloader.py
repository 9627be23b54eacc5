"""PIP-17 offload: round trips, Pulsar compatibility, failures, reads."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import (
    BlobStoreLedgerOffloader,
    ConfigError,
    Entry,
    Event,
    FormatError,
    InMemoryReadHandle,
    InvalidMetadataError,
    InvalidRangeError,
    LostEntriesError,
    NotFoundError,
    OffloadError,
    PluginManager,
    StorageDriver,
    TransientStorageError,
    hookimpl,
    open_offloader,
)
from offload_core.formats import entry_offsets
from offload_core.formats import pulsar_v1 as v1
from offload_core.memory import MemoryDriver
from offload_core.proto import LedgerMetadataFormat
from offload_core.testing.faults import Fault, FaultyDriver
from tests.pulsar_vectors import Vector, load_vectors

UUID = uuid.UUID("3f2504e0-4f89-11d3-9a0c-0305e82c3301")


def entries_for(count: int, seed: int = 1, largest: int = 300) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(rng.randrange(0, largest)) for _ in range(count)]


@pytest.fixture(params=["memory", "filesystem"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> StorageDriver:
    if request.param == "memory":
        return MemoryDriver()
    return FilesystemDriver(str(tmp_path / "bucket"))


def keys_in(driver: StorageDriver) -> list[str]:
    return [info.key for info in driver.list("")]


# -- round trips -------------------------------------------------------------


def test_multi_block_ledger_reads_back_byte_identical(store: StorageDriver) -> None:
    entries = entries_for(400)
    offloader = BlobStoreLedgerOffloader(store, max_block_size=4096, read_buffer_size=1500)
    result = offloader.offload(InMemoryReadHandle(42, entries), UUID, {"ManagedLedgerName": "t/ns/topic"})
    assert result.blocks >= 3
    assert keys_in(store) == sorted([result.data_key, result.index_key])

    handle = offloader.read_offloaded(42, UUID, result.driver_metadata)
    assert handle.last_entry_id == 399 and handle.length == sum(map(len, entries))
    assert [e.data for e in handle.read(0, 399)] == entries
    rng = random.Random(5)
    for _ in range(200):
        first = rng.randrange(400)
        last = min(399, first + rng.randrange(5))
        assert handle.read(first, last) == [Entry(42, i, entries[i]) for i in range(first, last + 1)]
    for entry_id in reversed(range(400)):
        assert handle.read(entry_id, entry_id)[0].data == entries[entry_id]


def test_objects_carry_the_version_and_extra_metadata(store: StorageDriver) -> None:
    offloader = BlobStoreLedgerOffloader(store)
    result = offloader.offload(InMemoryReadHandle(1, [b"a"]), UUID, {"ManagedLedgerName": "t/ns/topic"})
    for key in (result.data_key, result.index_key):
        assert store.stat(key).metadata == {
            "s3managedledgeroffloaderformatversion": "1",
            "managedledgername": "t/ns/topic",
        }


def test_extra_metadata_may_not_override_the_version(store: StorageDriver) -> None:
    offloader = BlobStoreLedgerOffloader(store)
    with pytest.raises(InvalidMetadataError):
        offloader.offload(InMemoryReadHandle(1, [b"a"]), UUID, {"S3ManagedLedgerOffloaderFormatVersion": "2"})
    assert keys_in(store) == []


def test_ledger_ids_above_2_to_the_32(store: StorageDriver) -> None:
    ledger_id = 2**40 + 7
    offloader = BlobStoreLedgerOffloader(store, max_block_size=512)
    result = offloader.offload(InMemoryReadHandle(ledger_id, entries_for(30)), UUID)
    assert result.data_key == f"{UUID}-ledger-{ledger_id}"
    assert offloader.read_offloaded(ledger_id, UUID).read(29, 29)[0].ledger_id == ledger_id


def test_prefix_is_put_before_every_key_and_followed_on_read() -> None:
    store = MemoryDriver()
    writer = BlobStoreLedgerOffloader(store, prefix="cluster-a/")
    result = writer.offload(InMemoryReadHandle(3, [b"x", b"y"]), UUID)
    assert keys_in(store) == [f"cluster-a/{UUID}-ledger-3", f"cluster-a/{UUID}-ledger-3-index"]
    reader = BlobStoreLedgerOffloader(store, prefix="elsewhere/")
    assert reader.read_offloaded(3, UUID, result.driver_metadata).read(0, 1)[1].data == b"y"


# -- Pulsar compatibility ------------------------------------------------------

VECTORS = load_vectors()


@pytest.mark.parametrize("vector", VECTORS, ids=[v.name for v in VECTORS])
def test_we_write_what_pulsar_writes(vector: Vector) -> None:
    store = MemoryDriver()
    metadata = LedgerMetadataFormat.FromString(bytes.fromhex(vector.spec["ledger_metadata"]["hex"]))
    offloader = BlobStoreLedgerOffloader(store, max_block_size=vector.spec["max_block_size"], entry_offsets=False)
    result = offloader.offload(InMemoryReadHandle(vector.ledger_id, vector.entries, metadata), UUID)
    assert store.read(result.data_key) == vector.data
    assert store.read(result.index_key) == vector.index


@pytest.mark.parametrize("vector", VECTORS, ids=[v.name for v in VECTORS])
def test_the_entry_offsets_section_only_grows_the_index(vector: Vector) -> None:
    store = MemoryDriver()
    metadata = LedgerMetadataFormat.FromString(bytes.fromhex(vector.spec["ledger_metadata"]["hex"]))
    offloader = BlobStoreLedgerOffloader(store, max_block_size=vector.spec["max_block_size"])
    result = offloader.offload(InMemoryReadHandle(vector.ledger_id, vector.entries, metadata), UUID)
    assert store.read(result.data_key) == vector.data
    index = store.read(result.index_key)
    assert index[: len(vector.index)] == vector.index
    section = entry_offsets.decode_section(index[len(vector.index) :])
    blocks = v1.decode_index(vector.index).entries
    assert section.block_count == len(blocks)
    assert list(section.lengths) == [len(entry) for entry in vector.entries]


@pytest.mark.parametrize("vector", VECTORS, ids=[v.name for v in VECTORS])
def test_we_read_what_pulsar_wrote(vector: Vector) -> None:
    store = MemoryDriver()
    version = {v1.FORMAT_VERSION_KEY: "1"}
    store.write(v1.data_key(str(UUID), vector.ledger_id), vector.data, metadata=version)
    store.write(v1.index_key(str(UUID), vector.ledger_id), vector.index, metadata=version)
    handle = BlobStoreLedgerOffloader(store, read_buffer_size=100).read_offloaded(vector.ledger_id, UUID)
    count = len(vector.entries)
    assert [e.data for e in handle.read(0, count - 1)] == vector.entries
    for entry_id in random.Random(3).sample(range(count), count):
        assert handle.read(entry_id, entry_id)[0].data == vector.entries[entry_id]
    with pytest.raises(InvalidRangeError):
        handle.read(0, count)


def test_index_keeps_segments_and_custom_metadata_order_and_drops_the_password() -> None:
    metadata = LedgerMetadataFormat(
        quorumSize=2,
        ensembleSize=3,
        ackQuorumSize=2,
        length=6,
        lastEntryId=2,
        state=LedgerMetadataFormat.CLOSED,
        password=b"secret",
        ctime=17,
    )
    metadata.segment.add(ensembleMember=["a:1", "b:1", "c:1"], firstEntryId=0)
    metadata.segment.add(ensembleMember=["a:1", "d:1", "c:1"], firstEntryId=2)
    for key in ["pulsar/managed-ledger", "application", "component"]:
        metadata.customMetadata.add(key=key, value=b"v")
    store = MemoryDriver()
    offloader = BlobStoreLedgerOffloader(store)
    result = offloader.offload(InMemoryReadHandle(5, [b"ab", b"cd", b"ef"], metadata), UUID)
    stored = v1.decode_index(store.read(result.index_key)).metadata()
    assert not stored.HasField("password")
    assert [s.firstEntryId for s in stored.segment] == [0, 2]
    assert [c.key for c in stored.customMetadata] == ["pulsar/managed-ledger", "application", "component"]
    assert offloader.read_offloaded(5, UUID).metadata.ctime == 17


def test_zero_length_entries_everywhere(store: StorageDriver) -> None:
    entries = [b"", b"x" * 50, b"", b"", b"y" * 60, b"", b"z", b""]
    offloader = BlobStoreLedgerOffloader(store, max_block_size=128 + 12 * 3 + 50)
    offloader.offload(InMemoryReadHandle(9, entries), UUID)
    handle = offloader.read_offloaded(9, UUID)
    assert [e.data for e in handle.read(0, 7)] == entries
    assert [handle.read(i, i)[0].data for i in range(8)] == entries


# -- rejected input --------------------------------------------------------------


def test_entry_too_large_for_a_block_raises_and_writes_nothing(store: StorageDriver) -> None:
    entries = [b"a" * 10, b"b" * 10, b"c" * 10, b"d" * 500, b"e"]
    offloader = BlobStoreLedgerOffloader(store, max_block_size=128 + 12 + 100)
    with pytest.raises(FormatError, match="entry 3 is 500 bytes.*raise the max block size"):
        offloader.offload(InMemoryReadHandle(1, entries), UUID)
    assert keys_in(store) == []


def test_open_ledger_is_rejected(store: StorageDriver) -> None:
    metadata = v1.closed_ledger_metadata(length=1, last_entry_id=0)
    metadata.state = LedgerMetadataFormat.OPEN
    with pytest.raises(OffloadError, match="ledger 4 is not closed"):
        BlobStoreLedgerOffloader(store).offload(InMemoryReadHandle(4, [b"x"], metadata), UUID)
    assert keys_in(store) == []


def test_empty_ledger_is_rejected(store: StorageDriver) -> None:
    with pytest.raises(OffloadError, match="ledger 4 is empty"):
        BlobStoreLedgerOffloader(store).offload(InMemoryReadHandle(4, []), UUID)
    assert keys_in(store) == []


def test_metadata_length_that_lies_is_caught(store: StorageDriver) -> None:
    metadata = v1.closed_ledger_metadata(length=5, last_entry_id=2)
    with pytest.raises(FormatError, match="ledger length 5 is less than its entries add up to"):
        BlobStoreLedgerOffloader(store).offload(InMemoryReadHandle(4, [b"abc", b"def", b"g"], metadata), UUID)
    assert keys_in(store) == []


class SkippingHandle(InMemoryReadHandle):
    """Returns the wrong entries: a broken hot tier."""

    def read(self, first: int, last: int) -> list[Entry]:
        return [Entry(self.ledger_id, e.entry_id + 1, e.data) for e in super().read(first, last)]


def test_read_handle_returning_wrong_entries_is_caught(store: StorageDriver) -> None:
    with pytest.raises(FormatError, match="returned entry 1 where 0 was asked for"):
        BlobStoreLedgerOffloader(store).offload(SkippingHandle(4, [b"a", b"b"]), UUID)
    assert keys_in(store) == []


@pytest.mark.parametrize(
    "options",
    [{"max_block_size": 100}, {"max_block_size": 2**31}, {"read_buffer_size": 0}, {"max_block_size": "64M"}],
)
def test_bad_sizes_are_config_errors(options: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="managedLedgerOffload"):
        BlobStoreLedgerOffloader(MemoryDriver(), **options)  # type: ignore[arg-type]


# -- failures at every stage leave nothing -------------------------------------------


FAILING_ENTRIES = entries_for(60, largest=100)
BLOCKS = len(
    list(
        v1.encode_data_blocks(
            FAILING_ENTRIES, entry_count=60, ledger_length=sum(map(len, FAILING_ENTRIES)), max_block_size=1024
        )
    )
)


@pytest.mark.parametrize(
    "fault",
    [
        {"op": "part", "nth": 1, "permanent": True},
        {"op": "part", "nth": 2, "permanent": True},
        {"op": "part", "nth": BLOCKS},
        {"op": "complete", "key": "ledger-8"},
        {"op": "write", "key": "-index", "permanent": True},
        {"op": "write", "key": "-index"},
    ],
    ids=["first-part", "middle-part", "last-part-transient", "complete", "index-permanent", "index-transient"],
)
def test_failure_at_each_stage_leaves_zero_objects(store: StorageDriver, fault: dict[str, object]) -> None:
    assert BLOCKS >= 3
    faulty = FaultyDriver(store, [Fault(**fault)])  # type: ignore[arg-type]
    offloader = BlobStoreLedgerOffloader(faulty, max_block_size=1024)
    with pytest.raises(OffloadError, match="injected"):
        offloader.offload(InMemoryReadHandle(8, FAILING_ENTRIES), UUID)
    assert faulty.fired_count == 1
    assert keys_in(store) == []


def test_failed_cleanup_is_reported_with_the_keys_left_behind() -> None:
    store = MemoryDriver()
    faulty = FaultyDriver(store, [Fault("write", key="-index", permanent=True), Fault("delete", times=None)])
    offloader = BlobStoreLedgerOffloader(faulty)
    with pytest.raises(OffloadError) as caught:
        offloader.offload(InMemoryReadHandle(8, [b"x"]), UUID)
    notes = "\n".join(caught.value.__notes__)
    assert f"{UUID}-ledger-8" in notes and "offload ledgers rm" in notes


class RecordingDriver(MemoryDriver):
    """Notes, for each part written, how far the handle had been read."""

    def __init__(self, handle: RecordingHandle) -> None:
        super().__init__()
        self.handle = handle
        self.read_upto_at_part: list[int] = []

    def _write(self, key, parts, metadata, if_absent):  # type: ignore[no-untyped-def]
        def watched() -> Iterator[bytes]:
            for part in parts:
                self.read_upto_at_part.append(self.handle.read_upto)
                yield part

        return super()._write(key, watched(), metadata, if_absent)


class RecordingHandle(InMemoryReadHandle):
    read_upto = -1

    def read(self, first: int, last: int) -> list[Entry]:
        self.read_upto = max(self.read_upto, last)
        return super().read(first, last)


def test_offload_streams_blocks_without_reading_the_whole_ledger_first() -> None:
    entries = [bytes(100)] * 2000  # 112 framed bytes each: 9 per 1 KiB block
    handle = RecordingHandle(1, entries)
    driver = RecordingDriver(handle)
    BlobStoreLedgerOffloader(driver, max_block_size=1024).offload(handle, UUID)
    per_block = (1024 - 128) // 112
    blocks = driver.read_upto_at_part[: len(entries) // per_block]
    assert len(blocks) > 200
    for number, read_upto in enumerate(blocks, start=1):
        # When block n is handed to the store, at most one batch beyond it has been read.
        assert read_upto < number * per_block + 10, (number, read_upto)


# -- reading ---------------------------------------------------------------------


@pytest.fixture
def offloaded() -> tuple[BlobStoreLedgerOffloader, MemoryDriver, list[bytes]]:
    store = MemoryDriver()
    entries = entries_for(300, largest=200)
    offloader = BlobStoreLedgerOffloader(store, max_block_size=2048, read_buffer_size=4096)
    offloader.offload(InMemoryReadHandle(11, entries), UUID)
    return offloader, store, entries


@pytest.mark.parametrize(("first", "last"), [(-1, 0), (5, 4), (0, 300), (300, 300)])
def test_invalid_entry_ranges_raise(offloaded, first: int, last: int) -> None:  # type: ignore[no-untyped-def]
    handle = offloaded[0].read_offloaded(11, UUID)
    with pytest.raises(InvalidRangeError, match="ledger 11"):
        handle.read(first, last)


def test_missing_objects_name_the_ledger(offloaded) -> None:  # type: ignore[no-untyped-def]
    offloader, store, _ = offloaded
    with pytest.raises(NotFoundError, match="offloaded ledger 12 is not in the store"):
        offloader.read_offloaded(12, UUID)
    store.delete([v1.data_key(str(UUID), 11)])
    with pytest.raises(NotFoundError, match=f"ledger 11 .*'{UUID}-ledger-11'"):
        offloader.read_offloaded(11, UUID)


def test_wrong_format_version_is_refused(offloaded) -> None:  # type: ignore[no-untyped-def]
    offloader, store, _ = offloaded
    key = v1.index_key(str(UUID), 11)
    store.write(key, store.read(key), metadata={v1.FORMAT_VERSION_KEY: "2"})
    with pytest.raises(FormatError, match="is '2', expected '1'"):
        offloader.read_offloaded(11, UUID)
    store.write(key, store.read(key), metadata={})
    with pytest.raises(FormatError, match="is None, expected '1'"):
        offloader.read_offloaded(11, UUID)


def test_a_truncated_data_object_serves_the_entries_before_the_cut(offloaded) -> None:  # type: ignore[no-untyped-def]
    offloader, store, entries = offloaded
    key = v1.data_key(str(UUID), 11)
    index = v1.decode_index(store.read(v1.index_key(str(UUID), 11)))
    last_block = index.entries[-1]
    store.write(key, store.read(key)[: last_block.offset + 200], metadata={v1.FORMAT_VERSION_KEY: "1"})
    handle = offloader.read_offloaded(11, UUID)
    intact = handle.read(0, last_block.first_entry_id - 1)
    assert [e.data for e in intact] == entries[: last_block.first_entry_id]
    with pytest.raises(LostEntriesError, match=rf"entries {last_block.first_entry_id}\.\.299 .* are lost") as lost:
        handle.read(last_block.first_entry_id, 299)
    assert (lost.value.first, lost.value.last) == (last_block.first_entry_id, 299)


def test_corrupt_entry_header_is_reported_with_its_offset(offloaded) -> None:  # type: ignore[no-untyped-def]
    offloader, store, entries = offloaded
    key = v1.data_key(str(UUID), 11)
    data = bytearray(store.read(key))
    data[128 + 4 : 128 + 12] = (77).to_bytes(8, "big")  # first entry's id
    store.write(key, bytes(data), metadata={v1.FORMAT_VERSION_KEY: "1"})
    with pytest.raises(FormatError, match="byte offset 128: found entry id 77, expected 0"):
        offloader.read_offloaded(11, UUID).read(0, 0)


def test_index_reads_are_retried_a_bounded_number_of_times(offloaded) -> None:  # type: ignore[no-untyped-def]
    offloader, store, entries = offloaded
    flaky = BlobStoreLedgerOffloader(FaultyDriver(store, [Fault("read", key="-index", times=2)]))
    assert flaky.read_offloaded(11, UUID).read(0, 0)[0].data == entries[0]
    broken = BlobStoreLedgerOffloader(FaultyDriver(store, [Fault("read", key="-index", times=None)]))
    with pytest.raises(TransientStorageError) as caught:
        broken.read_offloaded(11, UUID)
    assert "gave up after 3 attempts" in caught.value.__notes__[0]


def test_sequential_read_pays_one_request_per_buffer_not_per_entry(offloaded) -> None:  # type: ignore[no-untyped-def]
    offloader, store, entries = offloaded
    handle = offloader.read_offloaded(11, UUID)
    before = offloader.requests.snapshot()
    for entry_id in range(300):
        handle.read(entry_id, entry_id)
    reads = offloader.requests.since(before).requests["read"]
    data_size = store.stat(v1.data_key(str(UUID), 11)).size
    assert reads <= data_size // 4096 + 2
    assert reads < 300 / 10


def test_offsets_cache_makes_a_second_random_read_free(offloaded) -> None:  # type: ignore[no-untyped-def]
    offloader = BlobStoreLedgerOffloader(offloaded[1], max_block_size=2048, read_buffer_size=64)
    handle = offloader.read_offloaded(11, UUID)
    handle.read(200, 200)
    handle.read(10, 10)  # moves the buffer away
    before = offloader.requests.snapshot()
    handle.read(200, 200)
    assert offloader.requests.since(before).requests["read"] <= 2  # header and payload, no scan


def test_closed_handle_refuses_reads(offloaded) -> None:  # type: ignore[no-untyped-def]
    handle = offloaded[0].read_offloaded(11, UUID)
    handle.close()
    with pytest.raises(OffloadError, match="closed"):
        handle.read(0, 0)


def test_delete_is_idempotent(offloaded) -> None:  # type: ignore[no-untyped-def]
    offloader, store, _ = offloaded
    offloader.delete_offloaded(11, UUID)
    offloader.delete_offloaded(11, UUID)
    assert keys_in(store) == []


# -- plugins and events -----------------------------------------------------------


def test_open_offloader_takes_pulsar_option_names(tmp_path: Path) -> None:
    offloader = open_offloader(
        f"file://{tmp_path}",
        managedLedgerOffloadMaxBlockSizeInBytes=1024,
        managedLedgerOffloadReadBufferSizeInBytes=512,
        fsync=False,
    )
    assert isinstance(offloader, BlobStoreLedgerOffloader)
    assert (offloader.max_block_size, offloader.read_buffer_size) == (1024, 512)


def test_open_offloader_rejects_unknown_options() -> None:
    with pytest.raises(ConfigError, match="'max_blok_size'"):
        open_offloader("memory://", max_blok_size=1024)
    with pytest.raises(ConfigError, match="no ledger offloader named 'nope'"):
        open_offloader("memory://", offloader="nope")


def test_offloader_is_registered_like_a_plugin() -> None:
    spec = PluginManager(load_entry_points=False).offloader("blobstore")
    assert spec.factory is BlobStoreLedgerOffloader
    assert spec.plugin.name == "offload_core.offload.ledger"


def test_every_request_is_emitted_as_an_event() -> None:
    events: list[Event] = []

    class Listener:
        @hookimpl
        def offload_core_on_event(self, event: Event) -> None:
            events.append(event)

    manager = PluginManager(load_entry_points=False)
    manager.register(Listener())
    offloader = open_offloader("memory://", plugin_manager=manager, max_block_size=512)
    offloader.offload(InMemoryReadHandle(2, entries_for(20, largest=100)), UUID)
    offloader.read_offloaded(2, UUID).read(0, 19)
    kinds = [event.kind for event in events]
    assert kinds[0] == "offload.started" and "offload.finished" in kinds
    requests = [event for event in events if event.kind == "storage.request"]
    assert sum(event.fields["requests"] for event in requests) == offloader.requests.total
    assert {event.fields["op"] for event in requests} == {"write", "stat", "read"}
