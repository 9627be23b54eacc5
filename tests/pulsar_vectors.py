"""Loading the Pulsar-written v1 fixtures in tests/vectors/pulsar."""

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
