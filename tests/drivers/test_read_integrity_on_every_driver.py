"""A damaged data object is never read as data, on every driver.

The objects are built once on a memory store with 4 KiB blocks (below S3's
part minimum, so they are copied byte for byte rather than offloaded on
each backend), damaged, and read back through each real driver.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from offload_driver_filesystem import FilesystemDriver

from offload_core import BlobStoreLedgerOffloader, FormatError, InMemoryReadHandle, StorageDriver
from offload_core.formats import pulsar_v1 as v1
from offload_core.memory import MemoryDriver
from tests.emulators import Azurite, GcsEmulator, MotoS3

UUID = str(uuid.UUID("5b0e4a04-1c3e-4f4b-9c63-1f0b3d2a9e11"))
LEDGER = 1
BLOCK = 4096
ENTRY = 100
COUNT = 90


def build_objects() -> tuple[bytes, bytes, dict[str, str]]:
    source = MemoryDriver()
    rng = random.Random(20)
    entries = [rng.randbytes(ENTRY) for _ in range(COUNT)]
    BlobStoreLedgerOffloader(source, max_block_size=BLOCK).offload(InMemoryReadHandle(LEDGER, entries), UUID)
    data_key, index_key = v1.data_key(UUID, LEDGER), v1.index_key(UUID, LEDGER)
    return source.read(data_key), source.read(index_key), dict(source.stat(data_key).metadata)


def zeroed_object(data: bytes, index: v1.Index) -> bytes:
    return bytes(len(data))


def zeroed_second_header(data: bytes, index: v1.Index) -> bytes:
    start = index.entries[1].offset
    return data[:start] + bytes(v1.BLOCK_HEADER_LENGTH) + data[start + v1.BLOCK_HEADER_LENGTH :]


def zeroed_length_of_second_blocks_first_entry(data: bytes, index: v1.Index) -> bytes:
    start = index.entries[1].data_offset
    return data[:start] + bytes(4) + data[start + 4 :]


@pytest.fixture(params=["memory", "filesystem", "s3", "gcs", "azure"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> StorageDriver:
    if request.param == "memory":
        return MemoryDriver()
    if request.param == "filesystem":
        return FilesystemDriver(str(tmp_path / "bucket"))
    request.applymarker(pytest.mark.emulator)
    if request.param == "s3":
        from offload_driver_s3 import S3Driver

        moto: MotoS3 = request.getfixturevalue("s3")
        return S3Driver("offload-test", **{**moto.client_options(), "retry_attempts": 2})
    if request.param == "gcs":
        from offload_driver_gcs import GCSDriver

        gcs: GcsEmulator = request.getfixturevalue("gcs")
        return GCSDriver("offload-test", **{**gcs.client_options(), "retry_attempts": 4, "keep_alive": False})
    from offload_driver_azure import AzureBlobDriver

    azurite: Azurite = request.getfixturevalue("azurite")
    return AzureBlobDriver(azurite.new_container(), connection_string=azurite.connection_string(), retry_attempts=2)


def stored(store: StorageDriver, damage: Callable[[bytes, v1.Index], bytes] | None) -> BlobStoreLedgerOffloader:
    data, raw_index, metadata = build_objects()
    index = v1.decode_index(raw_index)
    if damage is not None:
        data = damage(data, index)
    store.write(v1.data_key(UUID, LEDGER), data, metadata=metadata)
    store.write(v1.index_key(UUID, LEDGER), raw_index, metadata=metadata)
    return BlobStoreLedgerOffloader(store, max_block_size=8 << 20, read_buffer_size=BLOCK)


def test_intact_objects_read_back(store: StorageDriver) -> None:
    handle = stored(store, None).read_offloaded(LEDGER, UUID)
    entries = handle.read(0, COUNT - 1)
    assert [entry.entry_id for entry in entries] == list(range(COUNT))
    assert all(len(entry.data) == ENTRY for entry in entries)


def test_a_zeroed_object_is_an_error_not_an_empty_entry(store: StorageDriver) -> None:
    handle = stored(store, zeroed_object).read_offloaded(LEDGER, UUID)
    with pytest.raises(FormatError, match=rf"object '{UUID}-ledger-1', byte offset 0: block 1: .*magic"):
        handle.read(0, 0)


def test_a_zeroed_block_header_stops_a_full_read(store: StorageDriver) -> None:
    offloader = stored(store, zeroed_second_header)
    second = v1.decode_index(offloader.driver.read(v1.index_key(UUID, LEDGER))).entries[1]
    handle = offloader.read_offloaded(LEDGER, UUID)
    with pytest.raises(FormatError, match=rf"byte offset {second.offset}: block 2: .*magic"):
        handle.read(0, COUNT - 1)
    # The first block is intact and stays readable.
    assert len(offloader.read_offloaded(LEDGER, UUID).read(0, second.first_entry_id - 1)) == second.first_entry_id


def test_a_zeroed_entry_length_is_caught_by_the_framing_after_it(store: StorageDriver) -> None:
    offloader = stored(store, zeroed_length_of_second_blocks_first_entry)
    second = v1.decode_index(offloader.driver.read(v1.index_key(UUID, LEDGER))).entries[1]
    entry_id = second.first_entry_id
    with pytest.raises(FormatError, match=rf"after entry {entry_id} .*framing is broken"):
        offloader.read_offloaded(LEDGER, UUID).read(entry_id, entry_id)
    with pytest.raises(FormatError, match=f"expected {entry_id + 1}"):
        offloader.read_offloaded(LEDGER, UUID).read(entry_id, entry_id + 1)
