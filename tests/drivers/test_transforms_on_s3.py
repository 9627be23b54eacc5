"""Transforms on S3 (moto's server): the chain in S3 user metadata, chunk
tables behind multipart uploads, ranged reads, tamper detection, key
rotation in place, and a ledger offloaded and read back through them."""

from __future__ import annotations

import base64
import json
import os
import uuid
from pathlib import Path

import pytest

from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle, PluginManager, StorageDriver
from offload_core.errors import FormatError
from offload_core.key_rotation import rotate_keys
from offload_core.testing import DriverContract, OffloaderContract
from offload_core.testing.offloader_contract import MakeOffloader
from offload_core.transforming_driver import CHAIN_KEY
from tests.emulators import MotoS3

pytestmark = pytest.mark.emulator


@pytest.fixture
def keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "keyring.json"
    path.write_text(json.dumps({"active": "k1", "keys": {"k1": base64.b64encode(os.urandom(32)).decode()}}))
    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", f"file:{path}")
    return path


class TestTransformedS3Contract(DriverContract):
    """The whole driver contract through zstd, aes-gcm and crc32c on S3
    (the model comparison with fewer examples: it runs 10 on plain S3 and
    25 through the same transforms on the filesystem)."""

    state_machine_examples = 3

    @pytest.fixture
    def driver(self, s3: MotoS3, keyring: Path) -> StorageDriver:
        return PluginManager().open_driver("s3://offload-test/contract", transforms="zstd,aes-gcm,crc32c",
                                           transform_chunk_size=2**20, **s3.client_options())  # fmt: skip


class TestOffloaderThroughTransformsOnS3(OffloaderContract):
    """The offloader contract through the same chain on S3 (blocks of S3's minimum part size)."""

    @pytest.fixture
    def store(self, s3: MotoS3, keyring: Path) -> StorageDriver:
        return PluginManager().open_driver("s3://offload-test/offloader", transforms="zstd,aes-gcm,crc32c",
                                           transform_chunk_size=2**20, **s3.client_options())  # fmt: skip

    @pytest.fixture
    def make_offloader(self) -> MakeOffloader:
        spec = PluginManager(load_entry_points=False).offloader_for_driver("memory")
        return lambda driver: spec.factory(driver, max_block_size=5 * 2**20, read_buffer_size=2**20)  # type: ignore[no-any-return]


def test_every_transform_on_s3(s3: MotoS3, keyring: Path) -> None:
    manager = PluginManager()
    options = s3.client_options()
    driver = manager.open_driver("s3://offload-test/t", transforms="zstd,aes-gcm,crc32c",
                                 transform_chunk_size=2**20, **options)  # fmt: skip
    data = os.urandom(3 * 2**20) + b"compressible " * 400_000  # several chunks, more than one 5 MiB part
    info = driver.write("big", [data[i : i + 3_000_000] for i in range(0, len(data), 3_000_000)], metadata={"a": "b"})
    assert info.size == len(data)
    plain = manager.open_driver("s3://offload-test/t", **options)
    chain = json.loads(plain.stat("big").metadata[CHAIN_KEY])
    assert [step["name"] for step in chain] == ["zstd", "aes-gcm", "crc32c"]
    reader = manager.open_driver("s3://offload-test/t", transforms="auto", **options)
    assert reader.read("big") == data
    assert reader.read("big", 2**20 - 5, 2**20 + 5) == data[2**20 - 5 : 2**20 + 5]
    assert reader.stat("big").size == len(data) and [i.size for i in reader.list("")] == [len(data)]

    stored = bytearray(plain.read("big"))
    stored[100] ^= 1
    plain.write("tampered", [bytes(stored)], metadata=dict(plain.stat("big").metadata))
    with pytest.raises(FormatError):
        reader.read("tampered", 0, 10)

    body = json.loads(keyring.read_text())
    body["keys"]["k2"] = base64.b64encode(os.urandom(32)).decode()
    body["active"] = "k2"
    keyring.write_text(json.dumps(body))
    # A fresh plugin manager registers a fresh transform, which reads the keyring anew.
    rotated = [r.key for r in rotate_keys(plain, PluginManager().transform) if r.changed]
    assert "big" in rotated
    assert json.loads(plain.stat("big").metadata[CHAIN_KEY])[1]["params"]["key_id"] == "k2"
    assert (
        PluginManager().open_driver("s3://offload-test/t", transforms="auto", **options).read("big", 0, 100)
        == data[:100]
    )


def test_a_ledger_offloaded_through_transforms_on_s3(s3: MotoS3, keyring: Path) -> None:
    driver = PluginManager().open_driver("s3://offload-test/ledgers", transforms="zstd,crc32c", **s3.client_options())
    offloader = BlobStoreLedgerOffloader(driver, max_block_size=5 * 2**20)
    entries = [b"entry %d " % n * 40 for n in range(20_000)]
    offloader.offload(InMemoryReadHandle(3, entries), uuid.UUID(int=3), {})
    handle = offloader.read_offloaded(3, uuid.UUID(int=3), {})
    try:
        assert [e.data for e in handle.read(0, 19_999)] == entries
        assert handle.read(12_345, 12_345)[0].data == entries[12_345]
    finally:
        handle.close()
