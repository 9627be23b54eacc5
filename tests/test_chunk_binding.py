"""Chunks are bound to their object: a stored chunk copied from another
object (to the same position or another, with its chunk-table entry) is a
FormatError naming the object read, under every chain, zstd alone included;
objects written before chunks were bound (chunk table v1, tests/vectors/
transforms_v1) still read, before and after their keys are rotated."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from offload_plugin_aes_gcm import AesGcmTransform, FileKeyring
from offload_plugin_crc32c import Crc32cTransform
from offload_plugin_zstd import ZstdTransform

from offload_core.errors import FormatError
from offload_core.formats.chunked import ChunkTable, chunk_crc, decode_footer, encode_footer
from offload_core.hooks import Transform
from offload_core.key_rotation import rotate_keys
from offload_core.memory import MemoryDriver
from offload_core.transforming_driver import CHAIN_KEY, TransformingDriver

KEY_1, KEY_2 = bytes(range(32)), bytes(range(1, 33))
CHECKED = ["crc32c", "zstd,crc32c", "crc32c,zstd", "aes-gcm", "zstd,aes-gcm", "aes-gcm,crc32c", "crc32c,zstd,aes-gcm"]
CHAINS = ["zstd", *CHECKED]
LEGACY = json.loads((Path(__file__).parent / "vectors" / "transforms_v1" / "objects.json").read_text())
LEGACY_DATA = b"".join(b"legacy line %03d\n" % n for n in range(22))


def transforms(ring: FileKeyring) -> dict[str, Transform]:
    return {"zstd": ZstdTransform(), "crc32c": Crc32cTransform(), "aes-gcm": AesGcmTransform(lambda: ring)}


def driver(
    inner: MemoryDriver, chain: str, chunk_size: int = 1000, ring: FileKeyring | None = None
) -> TransformingDriver:
    known = transforms(ring or FileKeyring({"k1": KEY_1}, "k1"))
    steps = [known[name] for name in chain.split(",") if name]
    return TransformingDriver(inner, lambda name, distribution=None: known[name], steps, chunk_size=chunk_size)


def stored_chunks(inner: MemoryDriver, key: str) -> tuple[ChunkTable, list[bytes]]:
    stored = inner.read(key)
    table = decode_footer(stored, len(stored))
    starts = table.starts
    return table, [stored[starts[i] : starts[i + 1]] for i in range(len(table.stored_lengths))]


def replace_chunk(inner: MemoryDriver, key: str, index: int, chunk: bytes, table: ChunkTable) -> None:
    """Object ``key`` with chunk ``index`` replaced by ``chunk``, under the chunk table ``table``."""
    chunks = stored_chunks(inner, key)[1]
    chunks[index] = chunk
    inner.write(key, [*chunks, encode_footer(table)], metadata=inner.stat(key).metadata)


def move_chunk(inner: MemoryDriver, source: str, source_index: int, target: str, target_index: int) -> ChunkTable:
    """Chunk ``source_index`` of ``source`` copied over chunk
    ``target_index`` of ``target`` with its chunk-table entry (every
    per-chunk field of the table: its stored length and whatever else the
    table records of it); the rest of the target's table is kept, so only
    what binds a chunk to its object can tell. Returns the table written."""
    table = stored_chunks(inner, target)[0]
    source_table, source_chunks = stored_chunks(inner, source)
    per_chunk = [f.name for f in dataclasses.fields(table) if isinstance(getattr(table, f.name), tuple)]
    moved: dict[str, Any] = {}
    for name in per_chunk:
        values = list(getattr(table, name))
        values[target_index] = getattr(source_table, name)[source_index]
        moved[name] = tuple(values)
    spliced = dataclasses.replace(table, **moved)
    replace_chunk(inner, target, target_index, source_chunks[source_index], spliced)
    return spliced


def refused(reader: TransformingDriver, key: str) -> FormatError:
    with pytest.raises(FormatError, match=re.escape(key)) as raised:
        reader.read(key)
    return raised.value


@pytest.mark.parametrize("moves", [(1, 1), (3, 0)], ids=["same index", "another index"])
@pytest.mark.parametrize("chain", CHAINS)
def test_a_chunk_copied_from_another_object_is_refused_naming_the_object(chain: str, moves: tuple[int, int]) -> None:
    inner = MemoryDriver()
    writer = driver(inner, chain)
    writer.write("topic-a/ledger-1", [b"".join(b"a%05d " % n for n in range(600))], metadata={})
    writer.write("topic-b/ledger-2", [b"".join(b"b%05d|" % (n * 7) for n in range(600))], metadata={})
    move_chunk(inner, "topic-b/ledger-2", moves[0], "topic-a/ledger-1", moves[1])
    refused(driver(inner, ""), "topic-a/ledger-1")
    assert driver(inner, "").read("topic-b/ledger-2", 0, 7) == b"b00000|"


@given(st.sampled_from(CHAINS), st.integers(1, 300), st.binary(min_size=1, max_size=1500),
       st.binary(min_size=1, max_size=1500), st.data())  # fmt: skip
def test_moved_chunks_never_read_back_as_bytes(
    chain: str, chunk_size: int, target: bytes, source: bytes, draw: st.DataObject
) -> None:
    inner = MemoryDriver()
    writer = driver(inner, chain, chunk_size)
    writer.write("a", [target], metadata={})
    writer.write("b", [source], metadata={})
    source_index = draw.draw(st.integers(0, (len(source) - 1) // chunk_size))
    target_index = draw.draw(st.integers(0, (len(target) - 1) // chunk_size))
    move_chunk(inner, "b", source_index, "a", target_index)
    refused(driver(inner, ""), "a")


@pytest.mark.parametrize("chain", CHECKED)
def test_a_forged_table_entry_still_fails_the_transforms_own_check(chain: str) -> None:
    # The chunk table's CRC catches chunks copied by mistake; even with an
    # entry recomputed for the target, crc32c and aes-gcm cover the object id.
    inner = MemoryDriver()
    writer = driver(inner, chain, chunk_size=500)
    writer.write("a", [bytes(range(256)) * 8], metadata={})
    writer.write("b", [bytes(range(255, -1, -1)) * 8], metadata={})
    table = move_chunk(inner, "b", 2, "a", 2)
    stored = stored_chunks(inner, "a")[1][2]
    assert table.object_id is not None
    crcs = list(table.chunk_crcs)
    crcs[2] = chunk_crc(table.object_id, 2, stored)
    replace_chunk(inner, "a", 2, stored, dataclasses.replace(table, chunk_crcs=tuple(crcs)))
    error = refused(driver(inner, ""), "a")
    assert "chunk 2" in str(error) and "chunk table" not in str(error)


def test_every_object_gets_its_own_id_in_its_chunk_table() -> None:
    inner = MemoryDriver()
    writer = driver(inner, "zstd")
    for key in ("a", "b"):
        writer.write(key, [b"the same bytes"], metadata={})
    ids = {stored_chunks(inner, key)[0].object_id for key in ("a", "b")}
    assert len(ids) == 2 and all(isinstance(i, bytes) and len(i) == 16 for i in ids)


def legacy_store(chains: list[str]) -> MemoryDriver:
    inner = MemoryDriver()
    for chain in chains:
        spec = LEGACY[chain]
        inner.write(chain, [base64.b64decode(spec["stored"])], metadata=spec["metadata"])
    return inner


@pytest.mark.parametrize("chain", sorted(LEGACY))
def test_objects_written_before_chunks_were_bound_still_read(chain: str) -> None:
    inner = legacy_store([chain])
    assert stored_chunks(inner, chain)[0].object_id is None  # a v1 chunk table
    reader = driver(inner, "")
    assert reader.read(chain) == LEGACY_DATA
    assert reader.read(chain, 95, 205) == LEGACY_DATA[95:205]
    assert reader.stat(chain).size == len(LEGACY_DATA)


@pytest.mark.parametrize("chain", ["crc32c", "aes-gcm"])
def test_a_bound_chain_over_a_chunk_table_without_an_object_id_is_damage(chain: str) -> None:
    inner = legacy_store([chain])
    steps = json.loads(inner.stat(chain).metadata[CHAIN_KEY])
    steps[0]["version"] = 2
    inner.replace_metadata(chain, {CHAIN_KEY: json.dumps(steps)})
    with pytest.raises(FormatError, match=f"{chain}: its {chain} chunks are bound to an object id, which its chunk"):
        driver(inner, "").read(chain)


def test_rotation_keeps_new_objects_bound_and_old_ones_readable() -> None:
    inner = legacy_store(["aes-gcm", "zstd,aes-gcm"])
    old_ring, new_ring = FileKeyring({"k1": KEY_1}, "k1"), FileKeyring({"k1": KEY_1, "k2": KEY_2}, "k2")
    writer = driver(inner, "zstd,aes-gcm", 1000, old_ring)
    writer.write("a", [b"".join(b"a%05d " % n for n in range(600))], metadata={})
    writer.write("b", [b"".join(b"b%05d " % n for n in range(600))], metadata={})
    known = transforms(new_ring)
    rotated = list(rotate_keys(inner, lambda name, distribution=None: known[name]))
    assert all(r.changed for r in rotated) and len(rotated) == 4
    only_new = FileKeyring({"k2": KEY_2}, "k2")  # the old key retired
    assert driver(inner, "", ring=only_new).read("aes-gcm") == LEGACY_DATA
    assert driver(inner, "", ring=only_new).read("zstd,aes-gcm") == LEGACY_DATA
    assert driver(inner, "", ring=only_new).read("a", 0, 7) == b"a00000 "
    move_chunk(inner, "b", 0, "a", 0)
    refused(driver(inner, "", ring=only_new), "a")
