"""Loading the Pulsar-written v1 and v2 fixtures in tests/vectors/pulsar."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).parent / "vectors" / "pulsar"


def payload(ledger_id: int, entry_id: int, size: int) -> bytes:
    """The fixtures' payload rule: byte j is (L*131 + e*31 + j) mod 256."""
    base = ledger_id * 131 + entry_id * 31
    return bytes((base + j) % 256 for j in range(size))


@dataclass(frozen=True)
class Vector:
    name: str
    spec: dict[str, Any]
    data: bytes
    index: bytes

    @property
    def ledger_id(self) -> int:
        return int(self.spec["ledger_id"])

    @property
    def entries(self) -> list[bytes]:
        sizes = self.spec["sizes_rule"]["sizes"]
        return [payload(self.ledger_id, entry_id, size) for entry_id, size in enumerate(sizes)]


def load_vectors() -> list[Vector]:
    manifest = json.loads((VECTORS / "manifest.json").read_text())
    return [
        Vector(
            name=spec["name"],
            spec=spec,
            data=(VECTORS / spec["files"]["data"]["file"]).read_bytes(),
            index=(VECTORS / spec["files"]["index"]["file"]).read_bytes(),
        )
        for spec in manifest["vectors"]
        if spec["kind"] == "v1"
    ]


def splitmix64(x: int) -> int:
    """The fixtures' size generator (see the manifest's conventions)."""
    mask = 2**64 - 1
    z = (x + 0x9E3779B97F4A7C15) & mask
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
    return z ^ (z >> 31)


@dataclass(frozen=True)
class SegmentVector:
    """A v2 (streaming) segment fixture."""

    name: str
    spec: dict[str, Any]
    data: bytes
    index: bytes

    @property
    def entries(self) -> list[tuple[int, int, bytes]]:
        """``(ledger id, entry id, payload)`` in the order they were offered."""
        out = []
        for ledger in self.spec["ledgers"]:
            ledger_id = ledger["ledger_id"]
            rule = ledger["size_rule"]
            assert rule["kind"] == "splitmix64_ledger"
            first, last = ledger["entries_in_segment"]
            for entry_id in range(first, last + 1):
                size = splitmix64((ledger_id * 1000003 + entry_id) % 2**64) % rule["modulus"]
                out.append((ledger_id, entry_id, payload(ledger_id, entry_id, size)))
        return out


def load_segment_vectors() -> list[SegmentVector]:
    manifest = json.loads((VECTORS / "manifest.json").read_text())
    return [
        SegmentVector(
            name=spec["name"],
            spec=spec,
            data=(VECTORS / spec["files"]["data"]["file"]).read_bytes(),
            index=(VECTORS / spec["files"]["index"]["file"]).read_bytes(),
        )
        for spec in manifest["vectors"]
        if spec["kind"] == "v2"
    ]
