"""Loading the Kafka-written segment fixtures in tests/vectors/kafka."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VECTORS = Path(__file__).parent / "vectors" / "kafka"


def b64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


@dataclass(frozen=True)
class KafkaCase:
    name: str
    spec: dict[str, Any]

    @property
    def dir(self) -> Path:
        return VECTORS / self.spec["dir"]

    def file(self, kind: str) -> bytes:
        (found,) = [f["name"] for f in self.spec["files"] if f["kind"] == kind]
        return (self.dir / found).read_bytes()

    @property
    def log(self) -> bytes:
        return self.file("log")


def kafka_cases() -> list[KafkaCase]:
    manifest = json.loads((VECTORS / "manifest.json").read_text())
    return [KafkaCase(case["name"], case) for case in manifest["cases"]]


def checkpoint_examples() -> list[dict[str, Any]]:
    return list(json.loads((VECTORS / "manifest.json").read_text())["leader_epoch_checkpoint_examples"])
