"""AES-256-GCM envelope encryption of stored chunks: round trips through
any chain, nothing in the clear, tampered or moved chunks refused, and
missing or wrong keys named."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from offload_driver_filesystem import FilesystemDriver
from offload_plugin_aes_gcm import AesGcmTransform, FileKeyring, KeyringError, keyring_from_spec
from offload_plugin_crc32c import Crc32cTransform
from offload_plugin_zstd import ZstdTransform

from offload_core import PluginManager, StorageDriver
from offload_core.errors import FormatError
from offload_core.formats.chunked import chunk_crc, decode_footer, encode_footer
from offload_core.memory import MemoryDriver
from offload_core.testing import DriverContract, OffloaderContract
from offload_core.testing.offloader_contract import MakeOffloader
from offload_core.transforming_driver import CHAIN_KEY, TransformingDriver

KEY_1, KEY_2 = bytes(range(32)), bytes(range(1, 33))


def keyring(active: str = "k1", **keys: bytes) -> FileKeyring:
    return FileKeyring(keys or {"k1": KEY_1}, active)


def driver_with(
    inner: StorageDriver, chain: list[object], ring: FileKeyring, chunk_size: int = 1000
) -> TransformingDriver:
    aes = AesGcmTransform(lambda: ring)
    known = {"aes-gcm": aes, "zstd": ZstdTransform(), "crc32c": Crc32cTransform()}
    resolved = [known[name] if isinstance(name, str) else name for name in chain]
    return TransformingDriver(inner, lambda name, distribution=None: known[name], resolved,  # type: ignore[arg-type]
                              chunk_size=chunk_size)  # fmt: skip


class TestEncryptedFilesystemDriver(DriverContract):
    large_part_size = 2**20

    @pytest.fixture
    def driver(self, tmp_path: Path) -> StorageDriver:
        return driver_with(FilesystemDriver(str(tmp_path / "bucket")), ["zstd", "aes-gcm"], keyring(), 64 * 1024)


class TestOffloaderThroughEncryption(OffloaderContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> StorageDriver:
        return driver_with(FilesystemDriver(str(tmp_path / "bucket")), ["aes-gcm"], keyring(), 2048)

    @pytest.fixture
    def make_offloader(self) -> MakeOffloader:
        spec = PluginManager(load_entry_points=False).offloader_for_driver("memory")
        return lambda driver: spec.factory(driver, max_block_size=4096, read_buffer_size=1024)  # type: ignore[no-any-return]


CHAINS = [["aes-gcm"], ["zstd", "aes-gcm"], ["aes-gcm", "crc32c"], ["crc32c", "zstd", "aes-gcm"]]


@settings(max_examples=30)
@given(st.sampled_from(CHAINS), st.binary(min_size=1, max_size=6000), st.data())
def test_round_trip_nothing_in_the_clear_and_tampering_refused(chain: list[str], data: bytes,
                                                                draw: st.DataObject) -> None:  # fmt: skip
    inner = MemoryDriver()
    plaintext = b"SECRET-" + data
    driver_with(inner, chain, keyring()).write("k", [plaintext], metadata={})
    stored = inner.read("k")
    assert b"SECRET-" not in stored
    recorded = json.loads(inner.stat("k").metadata[CHAIN_KEY])
    aes = next(step for step in recorded if step["name"] == "aes-gcm")
    assert aes["params"]["key_id"] == "k1" and KEY_1 not in base64.b64decode(aes["params"]["wrapped_key"])
    assert driver_with(inner, [], keyring()).read("k") == plaintext
    flipped = bytearray(stored)
    flipped[draw.draw(st.integers(0, len(stored) - 1))] ^= 1 << draw.draw(st.integers(0, 7))
    inner.write("k", [bytes(flipped)], metadata=inner.stat("k").metadata)
    with pytest.raises(FormatError):
        driver_with(inner, [], keyring()).read("k")


def test_swapped_chunks_are_refused_even_with_a_chunk_table_forged_to_match() -> None:
    inner = MemoryDriver()
    driver_with(inner, ["aes-gcm"], keyring(), chunk_size=100).write("k", [bytes(range(200))], metadata={})
    stored = inner.read("k")
    table = decode_footer(stored, len(stored))
    chunk = 12 + 100 + 16  # nonce, ciphertext, tag
    first, second = stored[:chunk], stored[chunk : 2 * chunk]
    assert table.object_id is not None
    forged = replace(table, chunk_crcs=(chunk_crc(table.object_id, 0, second), chunk_crc(table.object_id, 1, first)))
    inner.write("k", [second, first, encode_footer(forged)], metadata=inner.stat("k").metadata)
    with pytest.raises(FormatError, match="k: chunk 0 fails AES-GCM authentication: it was altered or moved"):
        driver_with(inner, [], keyring()).read("k", 0, 10)


def test_a_chunk_sealed_for_one_object_does_not_open_for_another_under_the_same_data_key() -> None:
    transform = AesGcmTransform(lambda: keyring())
    codec, params = transform.for_writing(object_id=b"A" * 16)
    sealed = codec.encode(b"chunk of object A", 0)
    assert transform.for_reading(params, version=2, object_id=b"A" * 16).decode(sealed, 0) == b"chunk of object A"
    with pytest.raises(FormatError, match="chunk 0 fails AES-GCM authentication"):
        transform.for_reading(params, version=2, object_id=b"B" * 16).decode(sealed, 0)


def test_missing_and_wrong_keys_are_named() -> None:
    inner = MemoryDriver()
    driver_with(inner, ["aes-gcm"], keyring("k2", k1=KEY_1, k2=KEY_2)).write("k", [b"data"], metadata={})
    assert driver_with(inner, [], keyring("k2", k1=KEY_1, k2=KEY_2)).read("k") == b"data"
    with pytest.raises(KeyringError, match="key id 'k2' is not in"):
        driver_with(inner, [], keyring("k1", k1=KEY_1)).read("k")
    with pytest.raises(KeyringError, match="key id 'k2' .* cannot unwrap"):
        driver_with(inner, [], keyring("k2", k2=KEY_1)).read("k")


def test_keyring_files_and_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "keyring.json"
    path.write_text(json.dumps({"active": "a", "keys": {"a": base64.b64encode(KEY_1).decode()}}))
    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", f"file:{path}")
    assert keyring_from_spec().active_key_id() == "a"
    monkeypatch.delenv("OFFLOAD_AES_GCM_KEYRING")
    with pytest.raises(KeyringError, match="set OFFLOAD_AES_GCM_KEYRING"):
        AesGcmTransform().for_writing(object_id=bytes(16))
    with pytest.raises(KeyringError, match="offload keys add --keyring"):
        FileKeyring.load(tmp_path / "missing.json")
    path.write_text(json.dumps({"active": "a", "keys": {"a": base64.b64encode(b"short").decode()}}))
    with pytest.raises(KeyringError, match="5 bytes"):
        FileKeyring.load(path)
    with pytest.raises(KeyringError, match="no aes-gcm keyring handles 'kms'"):
        keyring_from_spec("kms:projects/x")


def write_keyring(path: Path, active: str, **keys: bytes) -> None:
    path.write_text(json.dumps({"active": active, "keys": {k: base64.b64encode(v).decode() for k, v in keys.items()}}))


def test_rotation_rewraps_data_keys_without_rewriting_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from offload_core.cli import main

    ring = tmp_path / "keyring.json"
    write_keyring(ring, "k1", k1=KEY_1)
    monkeypatch.setenv("OFFLOAD_AES_GCM_KEYRING", f"file:{ring}")
    bucket = tmp_path / "bucket"
    url = f"file://{bucket}"
    writer = PluginManager().open_driver(url, transforms="zstd,aes-gcm")
    for n in range(3):
        writer.write(f"obj-{n}", [b"secret %d " % n * 500], metadata={"n": str(n)})
    inner = FilesystemDriver(str(bucket))
    inner.write("plain", [b"not encrypted"], metadata={})
    before = {n: inner.read(f"obj-{n}") for n in range(3)}

    write_keyring(ring, "k2", k1=KEY_1, k2=KEY_2)  # a new active key; the old one still held
    dry = CliRunner().invoke(main, ["keys", "rotate", url, "--dry-run"])
    assert dry.exit_code == 0 and "3 of 3 transformed object(s) need re-wrapping" in dry.stderr, dry.output
    done = CliRunner().invoke(main, ["keys", "rotate", url])
    assert done.exit_code == 0 and "3 of 3 transformed object(s) re-wrapped" in done.stderr, done.output
    again = CliRunner().invoke(main, ["keys", "rotate", url])
    assert "0 of 3" in again.stderr

    assert {n: inner.read(f"obj-{n}") for n in range(3)} == before  # data untouched
    for n in range(3):
        chain = json.loads(inner.stat(f"obj-{n}").metadata[CHAIN_KEY])
        assert chain[1]["params"]["key_id"] == "k2" and inner.stat(f"obj-{n}").metadata["n"] == str(n)
    write_keyring(ring, "k2", k2=KEY_2)  # the old key retired
    reader = PluginManager().open_driver(url, transforms="auto")
    assert reader.read("obj-1") == b"secret 1 " * 500
    assert reader.read("plain") == b"not encrypted"
