"""The committed generated protobuf code matches the .proto sources."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from grpc_tools import protoc

import offload_core.proto as proto_package
from offload_core.proto import LedgerMetadataFormat, ManagedLedgerInfo, OffloadContext

PROTO_DIR = Path(proto_package.__file__).parent


@pytest.mark.parametrize("source", sorted(p.name for p in PROTO_DIR.glob("*.proto")))
def test_generated_code_matches_source(tmp_path: Path, source: str) -> None:
    shutil.copy(PROTO_DIR / source, tmp_path / source)
    status = protoc.main(["protoc", f"-I{tmp_path}", f"--python_out={tmp_path}", f"--pyi_out={tmp_path}", source])
    assert status == 0
    stem = source.removesuffix(".proto")
    for generated in (f"{stem}_pb2.py", f"{stem}_pb2.pyi"):
        assert (PROTO_DIR / generated).read_text() == (tmp_path / generated).read_text(), (
            f"{generated} is stale: run `make proto` and commit the result"
        )


def test_field_numbers_are_pulsars() -> None:
    numbers = {f.name: f.number for f in OffloadContext.DESCRIPTOR.fields}
    assert numbers == {
        "uidMsb": 1,
        "uidLsb": 2,
        "complete": 3,
        "bookkeeperDeleted": 4,
        "timestamp": 5,
        "driverMetadata": 6,
        "offloadSegment": 7,
    }
    ledger_info = {f.name: f.number for f in ManagedLedgerInfo.LedgerInfo.DESCRIPTOR.fields}
    assert ledger_info == {
        "ledgerId": 1,
        "entries": 2,
        "size": 3,
        "timestamp": 4,
        "offloadContext": 5,
        "properties": 6,
    }


def test_bookkeeper_metadata_from_a_pulsar_index_round_trips() -> None:
    # Bytes of the ledger metadata inside ../shared/vectors/pulsar/v1-small.index.
    raw = bytes.fromhex("0801100118a6042009280332110a0d31302e302e302e313a333138311000380148015080d095ffbc31")
    metadata = LedgerMetadataFormat.FromString(raw)
    assert (metadata.quorumSize, metadata.ensembleSize, metadata.length, metadata.lastEntryId) == (1, 1, 550, 9)
    assert metadata.state == LedgerMetadataFormat.CLOSED
    assert list(metadata.segment[0].ensembleMember) == ["10.0.0.1:3181"]
    assert metadata.SerializeToString() == raw
