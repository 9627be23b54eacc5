"""Loading the objects Aiven's tiered-storage plugin wrote, in
../shared/vectors/aiven (next to the repository; OFFLOAD_SHARED_VECTORS
names another place), with the Kafka segment they hold."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SHARED = Path(os.environ.get("OFFLOAD_SHARED_VECTORS", Path(__file__).resolve().parents[2] / "shared" / "vectors"))
AIVEN = SHARED / "aiven"
PRIVATE_KEY_PAIR = "oracle-key-1"


def _require() -> Path:
    if not (AIVEN / "manifest.json").is_file():
        raise FileNotFoundError(
            f"Aiven golden vectors not found at {AIVEN}: check out the shared vectors next to the repository "
            "(../shared/vectors) or set OFFLOAD_SHARED_VECTORS to their folder"
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
