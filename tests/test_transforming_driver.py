"""Objects transformed chunk by chunk (zstd, crc32c, in any order): the
driver contract and the offloader contract hold through the transforms,
every chain round-trips, a flipped stored byte never comes back as data,
and an object whose transform is not installed says what to install."""

from __future__ import annotations

import contextlib
import itertools
import struct
import uuid
from pathlib import Path

import google_crc32c
import pytest
from hypothesis import given
from hypothesis import strategies as st
from offload_driver_filesystem import FilesystemDriver
from offload_plugin_crc32c import Crc32cTransform
from offload_plugin_zstd import ZstdTransform

from offload_core import PluginManager, StorageDriver
from offload_core.errors import FormatError, TransformNotInstalledError
from offload_core.formats.chunked import ChunkTable, decode_footer, encode_footer
from offload_core.memory import MemoryDriver
from offload_core.plugins import ENV_ALLOW
from offload_core.testing import DriverContract, OffloaderContract
from offload_core.testing.offloader_contract import MakeOffloader
from offload_core.transforming_driver import CHAIN_KEY, TransformingDriver

TRANSFORMS = {"zstd": ZstdTransform(), "crc32c": Crc32cTransform()}
CHAINS = [list(p) for n in (1, 2) for p in itertools.permutations(TRANSFORMS, n)]
# A broker offloading through zstd and crc32c in small chunks (on its own threads).
TRANSFORMING_BROKER = {"managedLedgerMaxEntriesPerLedger": 100, "retentionCheckIntervalInSeconds": 0,
                       "managedLedgerOffloadWorkerProcesses": 0, "managedLedgerOffloadDeletionLagMs": 0,
                       "managedLedgerOffloadTransforms": "zstd,crc32c",
                       "managedLedgerOffloadTransformChunkSizeInBytes": 4096}  # fmt: skip


# One manager for the module: building one reads every installed
# distribution's metadata, and the driver looks a transform up per object.
lookup = PluginManager().transform


def transforming(inner: StorageDriver, chain: list[str], chunk_size: int = 4096) -> TransformingDriver:
    return TransformingDriver(inner, lookup, [TRANSFORMS[name] for name in chain], chunk_size=chunk_size)


class TestTransformedFilesystemDriver(DriverContract):
    large_part_size = 2**20

    # Both codecs at once; the properties below cover every chain.
    @pytest.fixture(params=[["zstd", "crc32c"]], ids=lambda chain: "+".join(chain))
    def driver(self, request: pytest.FixtureRequest, tmp_path: Path) -> StorageDriver:
        return transforming(FilesystemDriver(str(tmp_path / "bucket")), request.param, chunk_size=64 * 1024)


class TestOffloaderThroughTransforms(OffloaderContract):
    @pytest.fixture(params=[["zstd", "crc32c"]], ids=lambda chain: "+".join(chain))
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> StorageDriver:
        return transforming(FilesystemDriver(str(tmp_path / "bucket")), request.param, chunk_size=2048)

    @pytest.fixture
    def make_offloader(self) -> MakeOffloader:
        spec = PluginManager(load_entry_points=False).offloader_for_driver("memory")
        return lambda driver: spec.factory(driver, max_block_size=4096, read_buffer_size=1024)  # type: ignore[no-any-return]


@given(st.sampled_from(CHAINS), st.binary(max_size=20_000), st.integers(1, 5000), st.data())
def test_every_chain_round_trips_any_range(chain: list[str], data: bytes, chunk_size: int, draw: st.DataObject) -> None:
    driver = transforming(MemoryDriver(), chain, chunk_size)
    info = driver.write("k", [data[: len(data) // 3], data[len(data) // 3 :]], metadata={"a": "b"})
    assert (info.size, info.metadata) == (len(data), {"a": "b"})
    assert driver.read("k") == data
    assert driver.stat("k").size == len(data) and CHAIN_KEY not in driver.stat("k").metadata
    assert [i.size for i in driver.list("")] == [len(data)]
    if data:
        start = draw.draw(st.integers(0, len(data) - 1))
        end = draw.draw(st.integers(start, len(data) + 10))
        assert driver.read("k", start, end) == data[start:end]
    fresh = transforming(driver.inner, [])  # a reader with no chain of its own reads it from the metadata
    assert fresh.read("k") == data


@given(st.sampled_from(CHAINS), st.binary(min_size=1, max_size=5000), st.data())
def test_a_flipped_stored_byte_never_comes_back_as_data(chain: list[str], data: bytes, draw: st.DataObject) -> None:
    inner = MemoryDriver()
    transforming(inner, chain, 700).write("k", [data], metadata={})
    stored = bytearray(inner.read("k"))
    position = draw.draw(st.integers(0, len(stored) - 1))
    stored[position] ^= 1 << draw.draw(st.integers(0, 7))
    inner.write("k", [bytes(stored)], metadata=inner.stat("k").metadata)
    reader = transforming(inner, [])
    try:
        got = reader.read("k")
    except FormatError:
        return
    # zstd alone may rewrite a frame header bit that changes nothing it decodes; the bytes must still be intact.
    assert got == data


def test_untransformed_objects_are_stored_byte_for_byte_and_read_through() -> None:
    inner = MemoryDriver()
    plain = transforming(inner, [])
    plain.write("plain", [b"abc", b"def"], metadata={"x": "1"})
    assert inner.read("plain") == b"abcdef" and inner.stat("plain").metadata == {"x": "1"}
    inner.write("theirs", [b"written elsewhere"], metadata={})
    assert transforming(inner, ["zstd"]).read("theirs", 8) == b"elsewhere"


def test_a_ranged_read_costs_one_get_once_the_layout_is_known(tmp_path: Path) -> None:
    inner = FilesystemDriver(str(tmp_path / "bucket"))
    driver = transforming(inner, ["zstd", "crc32c"], chunk_size=1000)
    driver.write("k", [bytes(range(256)) * 100], metadata={})
    reader = transforming(inner, [])
    reader.read("k", 0, 10)
    before = inner.request_counts["read"]
    assert reader.read("k", 12_345, 12_400) == (bytes(range(256)) * 100)[12_345:12_400]
    assert reader.read("k", 999, 1001) == (bytes(range(256)) * 100)[999:1001]  # two chunks, one GET
    assert inner.request_counts["read"] - before == 2


def test_a_forgotten_object_is_read_as_before_its_layout_learned_again() -> None:
    inner = MemoryDriver()
    data = bytes(range(256)) * 100
    transforming(inner, ["zstd", "crc32c"], chunk_size=1000).write("k", [data], metadata={})
    inner.write("plain", [b"as written"], metadata={})
    reader = transforming(inner, [])
    assert reader.read("k", 10, 20) == data[10:20] and reader.read("plain") == b"as written"
    stats = inner.request_counts["stat"]
    reader.read("k", 30, 40)
    reader.read("plain")
    assert inner.request_counts["stat"] == stats  # layouts known: no stat
    reader.forget("k")
    reader.forget("plain")
    reader.forget("never-read")
    assert reader.read("k", 2000, 2100) == data[2000:2100] and reader.read("plain") == b"as written"
    assert inner.request_counts["stat"] == stats + 2  # each learned again


def test_zstd_shrinks_compressible_objects() -> None:
    inner = MemoryDriver()
    transforming(inner, ["zstd"], 64 * 1024).write("k", [b"the same line again\n" * 50_000], metadata={})
    assert inner.stat("k").size * 20 < 1_000_000


def test_an_object_whose_transform_is_not_installed_names_the_distribution() -> None:
    class Reverse:
        name, version, distribution = "reverse", 1, "offload-plugin-reverse"

        class _Codec:
            def encode(self, chunk: bytes, index: int) -> bytes:
                return chunk[::-1]

            def decode(self, stored: bytes, index: int) -> bytes:
                return stored[::-1]

        def for_writing(self, *, object_id):  # type: ignore[no-untyped-def]
            return self._Codec(), {}

        def for_reading(self, params, *, version, object_id):  # type: ignore[no-untyped-def]
            return self._Codec()

    inner = MemoryDriver()
    TransformingDriver(inner, lookup, [Reverse()]).write("k", [b"data"], metadata={})
    with pytest.raises(TransformNotInstalledError, match="install offload-plugin-reverse"):
        transforming(inner, []).read("k")
    newer = TransformingDriver(inner, lambda name, distribution=None: Reverse())
    assert newer.read("k") == b"data"
    Reverse.version = 0
    with pytest.raises(TransformNotInstalledError, match="upgrade offload-plugin-reverse"):
        TransformingDriver(inner, lambda name, distribution=None: Reverse()).read("k")


@given(st.integers(1, 10_000), st.lists(st.tuples(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)), max_size=50),
       st.binary(min_size=16, max_size=16))  # fmt: skip
def test_chunk_table_round_trip(chunk_size: int, entries: list[tuple[int, int]], object_id: bytes) -> None:
    lengths = [length for length, _ in entries]
    logical = max(0, (len(lengths) - 1) * chunk_size + (1 if lengths else 0))
    table = ChunkTable(chunk_size, logical, tuple(lengths), object_id, tuple(crc for _, crc in entries))
    footer = encode_footer(table)
    assert decode_footer(footer, sum(lengths) + len(footer)) == table


@given(st.binary(max_size=300), st.integers(0, 10_000))
def test_arbitrary_tails_raise_only_format_errors(tail: bytes, size: int) -> None:
    with contextlib.suppress(FormatError):
        decode_footer(tail, size)


@given(st.sampled_from([0xC7C7ED02, 0xC7C7ED01, 0xC7C7ED03]), st.binary(max_size=120), st.integers(0, 500))
def test_footers_that_pass_their_crc_but_hold_anything_raise_only_format_errors(
    magic: int, rest: bytes, chunks_before: int
) -> None:
    body = magic.to_bytes(4, "big") + rest
    footer = body + struct.pack(">II", google_crc32c.value(body), len(body) + 8)
    with contextlib.suppress(FormatError):
        table = decode_footer(footer, chunks_before + len(footer))
        assert table.starts[-1] == chunks_before


def test_a_broker_policy_offloads_through_the_chain_and_reads_it_back(tmp_path: Path) -> None:
    import json as _json

    from click.testing import CliRunner

    from offload_core.cli import main
    from offload_core.managed_ledger import Broker, ReadPriority, parse_config
    from offload_core.model import Position

    config = parse_config(TRANSFORMING_BROKER)
    payloads = [b"order %d: " % n + b"x" * 300 for n in range(250)]
    with Broker(tmp_path / "data", config) as broker:
        ledger = broker.topic("acme/orders/events")
        for payload in payloads:
            ledger.append(payload)
        assert ledger.offload_prefix().status == "success"
        ledger.delete_hot_copies_past_lag()
        first = ledger.ledgers()[0].ledger_id
        back = ledger.read_tiered(Position(first, 0), 200, priority=ReadPriority.OFFLOADED_ONLY)
        assert [e.entry.data for e in back] == payloads[:200]
    bucket = tmp_path / "data" / "bucket"
    plain = FilesystemDriver(str(bucket))
    data_keys = [i.key for i in plain.list("") if "-ledger-" in i.key and not i.key.endswith("-index")]
    assert data_keys
    stored = plain.stat(data_keys[0])
    assert _json.loads(stored.metadata[CHAIN_KEY])[0]["name"] == "zstd"
    assert stored.size < 100 * 310 / 5  # compressed

    url = f"file://{bucket}"
    cat = CliRunner().invoke(main, ["ledgers", "cat", url, str(first), "-o", "transforms=auto", "--json"])
    assert cat.exit_code == 0, cat.output
    assert [_json.loads(line)["entry_id"] for line in cat.stdout.splitlines()] == list(range(100))
    without = PluginManager(environ={ENV_ALLOW: "filesystem"}).open_driver(url, transforms="auto")
    with pytest.raises(TransformNotInstalledError, match="install offload-plugin-zstd"):
        without.read(data_keys[0], 0, 10)


def test_chunks_of_one_object_decode_on_many_threads_at_once() -> None:
    from concurrent.futures import ThreadPoolExecutor

    inner = MemoryDriver()
    data = b"".join(b"line %d of a compressible object\n" % n for n in range(40_000))
    transforming(inner, ["zstd", "crc32c"], 4096).write("k", [data], metadata={})
    reader = transforming(inner, [])
    ranges = [(start, start + 9000) for start in range(0, len(data), 7000)] * 3
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda r: reader.read("k", *r), ranges))
    assert got == [data[a:b] for a, b in ranges]


def test_windows_off_chunk_boundaries_fetch_and_decode_each_chunk_once() -> None:
    inner = MemoryDriver()
    data = bytes(range(256)) * 400  # 100 chunks of 1024
    transforming(inner, ["zstd"], 1024).write("k", [data], metadata={})
    reader = transforming(inner, [])
    reader.read("k", 0, 1)  # the layout
    fetched_before = inner.request_counts["read"]
    out = b"".join(reader.read("k", start, start + 1000) for start in range(500, len(data), 1000))
    assert out == data[500:]
    windows = len(range(500, len(data), 1000))
    assert inner.request_counts["read"] - fetched_before <= windows + 1
    # Rewritten under the same key: nothing stale is served.
    reader.write("k", [b"new"], metadata={})
    assert reader.read("k") == b"new"


def test_ledgers_verify_checks_every_chunk_of_a_transformed_ledger(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from offload_core import BlobStoreLedgerOffloader, InMemoryReadHandle
    from offload_core.cli import main

    bucket = tmp_path / "bucket"
    inner = FilesystemDriver(str(bucket))
    offloader = BlobStoreLedgerOffloader(transforming(inner, ["crc32c"], 1024), max_block_size=4096)
    offloader.offload(InMemoryReadHandle(5, [b"payload %d" % n * 20 for n in range(300)]), uuid.UUID(int=7), {})
    url = f"file://{bucket}"
    clean = CliRunner().invoke(main, ["ledgers", "verify", url, "-o", "transforms=auto"])
    assert clean.exit_code == 0 and "1 ledger" in clean.output, clean.output
    (data_key,) = [i.key for i in inner.list("") if i.key.endswith("-ledger-5")]
    stored = bytearray(inner.read(data_key))
    stored[3000] ^= 0x01  # a payload byte, which a plain PIP-17 object could not detect
    inner.write(data_key, [bytes(stored)], metadata=inner.stat(data_key).metadata)
    damaged = CliRunner().invoke(main, ["ledgers", "verify", url, "-o", "transforms=auto"])
    assert damaged.exit_code == 1
    assert "CRC-32C" in damaged.output
