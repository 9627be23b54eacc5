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


FILESYSTEM_BACKEND = "io.aiven.kafka.tieredstorage.storage.filesystem.FileSystemStorage"


def run_root(run: AivenRun) -> Path:
    """The run's storage.root: its objects sit at ``<root>/<object key>``."""
    return AIVEN / str(run.spec["dir"])


def server_properties(path: Path, run: AivenRun, storage: dict[str, str] | None = None) -> Path:
    """A broker's ``server.properties`` at ``path`` configuring the plugin as
    ``run`` was (its rsm.config, key pair files), over ``storage`` (the
    ``storage.*`` keys; by default, the filesystem backend at the run's
    folder)."""
    storage = storage or {"backend.class": FILESYSTEM_BACKEND, "root": str(run_root(run))}
    config = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in run.spec["rsm_config"].items()}
    if config.get("encryption.enabled") == "true":
        keys = AIVEN / "keys"
        config |= {"encryption.key.pair.id": PRIVATE_KEY_PAIR, "encryption.key.pairs": PRIVATE_KEY_PAIR,
                   f"encryption.key.pairs.{PRIVATE_KEY_PAIR}.public.key.file": f"{keys}/{PRIVATE_KEY_PAIR}.public.pem",
                   f"encryption.key.pairs.{PRIVATE_KEY_PAIR}.private.key.file":
                       f"{keys}/{PRIVATE_KEY_PAIR}.private.pem"}  # fmt: skip
    config |= {f"storage.{k}": v for k, v in storage.items()}
    lines = ["broker.id=1", "remote.log.storage.system.enable=true",
             "remote.log.storage.manager.class.name=io.aiven.kafka.tieredstorage.RemoteStorageManager"]  # fmt: skip
    lines += [f"rsm.config.{k}={v}" for k, v in config.items()]
    path.write_text("\n".join(lines) + "\n")
    return path
