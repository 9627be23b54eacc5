"""Loading the objects Aiven's tiered-storage plugin wrote, in
tests/vectors/aiven (a copy of the shared golden vectors, beside the
Kafka-written segment they hold, tests/vectors/kafka/a-uncompressed)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AIVEN = Path(__file__).parent / "vectors" / "aiven"
PRIVATE_KEY_PAIR = "oracle-key-1"


def _require() -> Path:
    if not (AIVEN / "manifest.json").is_file():
        raise FileNotFoundError(
            f"Aiven golden vectors not found at {AIVEN}: restore tests/vectors/aiven from the repository"
        )
    return AIVEN


@dataclass(frozen=True)
class AivenRun:
    name: str
    spec: dict[str, Any]

    def object_bytes(self, suffix: str) -> bytes:
        return (AIVEN / str(self.spec["outputs"][suffix]["path"])).read_bytes()

    def object_key(self, suffix: str) -> str:
        return str(self.spec["outputs"][suffix]["key"])

    def input_bytes(self, kind: str) -> bytes:
        return (AIVEN / str(self.spec["inputs"][kind]["path"])).read_bytes()

    @property
    def prefix(self) -> str:
        return str(self.spec["rsm_config"]["key.prefix"])

    def objects(self) -> dict[str, bytes]:
        return {self.object_key(suffix): self.object_bytes(suffix) for suffix in ("log", "indexes", "rsm-manifest")}


def aiven_runs() -> list[AivenRun]:
    manifest = json.loads((_require() / "manifest.json").read_text())
    return [AivenRun(run["config"], run) for run in manifest["runs"]]


def private_keys() -> dict[str, bytes]:
    return {PRIVATE_KEY_PAIR: (_require() / "keys" / f"{PRIVATE_KEY_PAIR}.private.pem").read_bytes()}
