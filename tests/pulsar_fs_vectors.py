"""Loading the Hadoop-written MapFile fixtures in tests/vectors/pulsar-fs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.pulsar_vectors import payload

VECTORS = Path(__file__).parent / "vectors" / "pulsar-fs"


@dataclass(frozen=True)
class FsVector:
    name: str
    spec: dict[str, Any]

    @property
    def root(self) -> Path:
        """The folder standing in for hadoop.tmp.dir."""
        return VECTORS / self.name

    @property
    def directory(self) -> Path:
        return self.root / self.spec["mapfile_dir"]

    @property
    def ledger_id(self) -> int:
        return int(self.spec["ledger_id"])

    @property
    def metadata(self) -> bytes:
        return bytes.fromhex(self.spec["ledger_metadata"]["hex"])

    @property
    def data_sync(self) -> bytes:
        return bytes.fromhex(self.spec["sync"]["data_hex"])

    @property
    def index_sync(self) -> bytes:
        return bytes.fromhex(self.spec["sync"]["index_hex"])

    @property
    def entries(self) -> list[bytes]:
        return [payload(self.ledger_id, e["entry_id"], e["size"]) for e in self.spec["entries"]]

    def file(self, name: str) -> bytes:
        return (self.directory / name).read_bytes()


def load_fs_vectors() -> list[FsVector]:
    manifest = json.loads((VECTORS / "manifest.json").read_text())
    return [FsVector(spec["case"], spec) for spec in manifest["cases"]]
