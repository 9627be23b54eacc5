"""Credentials for the offload store passed to a broker and to ticket
writers as driver options: used by every driver they open, never recorded
with a ledger, never needed from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.errors import ConfigError
from offload_core.managed_ledger import Broker, ReadPriority, parse_config, write_offload, write_segment
from offload_core.model import Position
from tests.emulators import MotoS3

TOPIC = "persistent://public/default/credentials"
SECRETS = {"access_key_id": "AKIABROKEROPTIONS", "secret_access_key": "broker-secret-never-recorded"}


def s3_config(s3: MotoS3) -> dict[str, object]:
    return {
        "managedLedgerMaxEntriesPerLedger": 50,
        "managedLedgerOffloadDriver": "aws-s3",
        "managedLedgerOffloadBucket": "offload-test",
        "managedLedgerOffloadServiceEndpoint": s3.endpoint,
        "managedLedgerOffloadRegion": "us-east-1",
        "managedLedgerOffloadMaxBlockSizeInBytes": 5 * 2**20,
    }


@pytest.mark.emulator
def test_credentials_as_driver_options_write_and_read_offloads_and_are_never_recorded(
    s3: MotoS3, tmp_path: Path
) -> None:
    config = parse_config(s3_config(s3))
    data = tmp_path / "data"
    with Broker(data, config, driver_options=SECRETS) as broker:
        ledger = broker.topic(TOPIC)
        for n in range(120):  # two sealed ledgers and an open one
            ledger.append(b"message %d" % n)
        first, second = ledger.offloadable_ledgers()
        # A ticket written elsewhere (a Spark task) takes the credentials beside it, not in it.
        ticket = ledger.prepare_offload(first)
        assert not set(SECRETS.values()) & {value for _, value in ticket.settings}
        with pytest.raises(ConfigError, match="no AWS credentials found for s3://offload-test"):
            write_offload(ticket)
        write_offload(ticket, driver_options=SECRETS)
        ledger.complete_offload(ticket)
        # The broker's own offload and reads use them too.
        assert ledger.offload_prefix().status == "success"
        entries = ledger.read(Position(first, 0), 100, priority=ReadPriority.OFFLOADED_ONLY)
        assert [entry.data for entry in entries] == [b"message %d" % n for n in range(100)]
        assert [state.tier for state in ledger.ledgers() if state.ledger_id in (first, second)] == ["hot+offloaded"] * 2
    keys = [item["Key"] for item in s3.client().list_objects_v2(Bucket="offload-test")["Contents"]]
    assert len(keys) == 4
    # Where the offloads are is recorded (to read them back); the credentials are not, anywhere in the metadata.
    recorded = (data / "metadata.db").read_bytes()
    assert b"offload-test" in recorded and s3.endpoint.encode() in recorded
    assert not any(secret.encode() in recorded for secret in SECRETS.values())


@pytest.mark.parametrize(
    ("option", "config_key"),
    [("endpoint", "managedLedgerOffloadServiceEndpoint"), ("bucket", "managedLedgerOffloadBucket")],
)
def test_driver_options_naming_where_offloads_go_are_refused_naming_the_config_key(
    tmp_path: Path, option: str, config_key: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        Broker(tmp_path / "data", driver_options={option: "http://127.0.0.1:9"})
    message = str(caught.value)
    assert f"{option} ({config_key})" in message and "set them in the broker config" in message
    assert not (tmp_path / "data").exists()


@pytest.mark.emulator
def test_a_segment_ticket_is_written_with_credentials_given_beside_it(s3: MotoS3, tmp_path: Path) -> None:
    with Broker(tmp_path / "data", parse_config(s3_config(s3)), driver_options=SECRETS) as broker:
        ledger = broker.topic(TOPIC)
        for n in range(120):
            ledger.append(b"segment message %d" % n)
        broker.policies.update("topic", "public/default/credentials", streaming_enabled=True)
        (ticket,) = ledger.prepare_segment_tickets()
        with pytest.raises(ConfigError, match="no AWS credentials found for s3://offload-test"):
            write_segment(ticket)
        result = write_segment(ticket, driver_options=SECRETS)
        ledger.complete_segment_ticket(ticket, {run.ledger_id: run.last_entry_id for run in result.ledgers})
        first = ticket.runs[0].ledger_id
        entries = ledger.read(Position(first, 0), 100, priority=ReadPriority.OFFLOADED_ONLY)
        assert [entry.data for entry in entries] == [b"segment message %d" % n for n in range(100)]
