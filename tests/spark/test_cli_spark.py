"""offload spark backfill / verify / retention from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from offload_core import open_driver
from offload_core.cli import main
from offload_core.formats import pulsar_v1 as v1
from offload_core.managed_ledger import Broker, parse_config
from offload_core.offload.ledgers.inventory import find_offloaded_ledgers
from tests.emulators import MotoS3

pytestmark = pytest.mark.spark


@pytest.fixture
def data(tmp_path: Path) -> Path:
    config = tmp_path / "broker.toml"
    config.write_text("managedLedgerMaxEntriesPerLedger = 25\n")
    with Broker(tmp_path / "data", parse_config({"managedLedgerMaxEntriesPerLedger": 25})) as broker:
        ledger = broker.topic("persistent://public/default/cli")
        for n in range(100):
            ledger.append(b"cli message %d" % n)
    return tmp_path


def run(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_backfill_verify_and_retention_verbs(spark: Any, data: Path) -> None:
    data_dir = str(data / "data")
    result = run("spark", "backfill", "--data-dir", data_dir, "--config", str(data / "broker.toml"))
    assert result.exit_code == 0, result.output
    assert result.stdout.count("offloaded  public/default/cli ledger") == 4
    assert "backfill: 4 offloaded, 0 failed" in result.stderr
    assert "backfill: offloading 4 ledger(s): 4/4 tasks" in result.stderr

    url = f"file://{data / 'data' / 'bucket'}"
    assert run("spark", "verify", url).exit_code == 0
    driver = open_driver(url)
    ledger = find_offloaded_ledgers(driver)[1]
    data_object = bytearray(driver.read(ledger.data_key))
    data_object[1] ^= 0xFF
    driver.write(ledger.data_key, bytes(data_object), metadata={v1.FORMAT_VERSION_KEY: v1.FORMAT_VERSION})
    failed = run("spark", "verify", url, "--json")
    assert failed.exit_code == 1
    defect, summary, totals = [json.loads(line) for line in failed.stdout.splitlines()]
    assert (defect["ledger_id"], defect["key"], defect["offset"]) == (ledger.ledger_id, ledger.data_key, 0)
    assert summary["problem"].startswith("no entry is recoverable")
    assert totals == {"offloads": 4, "blocks": totals["blocks"], "defects": 2}

    dry = run("spark", "retention", url, "--before", "2999-01-01", "--data-dir", data_dir)
    assert dry.exit_code == 0
    assert dry.stdout.count("keep     ledger") == 4 and "referenced by managed ledger" in dry.output
    assert "would delete 0 offload(s), 0 bytes; 0 orphan(s); dry run" in dry.stderr
    going = run("spark", "retention", url, "--older-than", "0s")
    assert going.exit_code == 0 and going.stdout.count("would delete ledger") == 4
    assert not any(line.startswith("delete") for line in going.stdout.splitlines())
    gone = run("spark", "retention", url, "--older-than", "0s", "--execute")
    assert gone.exit_code == 0 and gone.stdout.count("deleted  ledger") == 4
    assert find_offloaded_ledgers(driver) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "3 days"], "not a duration"),
        (["--before", "yesterday"], "not an ISO date"),
        ([], "exactly one of"),
        (["--older-than", "1d", "--delete-orphans"], "needs --data-dir"),
    ],
)
def test_retention_refuses_unclear_requests(spark: Any, tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["spark", "retention", f"file://{tmp_path}", *args])
    assert result.exit_code == 2 and message in result.output


@pytest.mark.emulator
def test_backfill_takes_credentials_as_options_and_refuses_a_location_among_them(
    spark: Any, data: Path, s3: MotoS3
) -> None:
    config = data / "s3.toml"
    config.write_text(
        'managedLedgerMaxEntriesPerLedger = 25\nmanagedLedgerOffloadDriver = "aws-s3"\n'
        f'managedLedgerOffloadBucket = "offload-test"\nmanagedLedgerOffloadServiceEndpoint = "{s3.endpoint}"\n'
        'managedLedgerOffloadRegion = "us-east-1"\nmanagedLedgerOffloadMaxBlockSizeInBytes = 5242880\n'
    )
    data_dir = str(data / "data")
    located = run("spark", "backfill", "--data-dir", data_dir, "--config", str(config), "-o", f"endpoint={s3.endpoint}")
    assert located.exit_code == 1 and "endpoint (managedLedgerOffloadServiceEndpoint)" in located.output
    secret = "cli-backfill-secret"
    args = ["-o", "access_key_id=AKIACLIBACKFILL", "-o", f"secret_access_key={secret}"]
    result = run("spark", "backfill", "--data-dir", data_dir, "--config", str(config), *args)
    assert result.exit_code == 0, result.output
    assert "backfill: 4 offloaded, 0 failed" in result.stderr and secret not in result.output
    assert len(s3.client().list_objects_v2(Bucket="offload-test")["Contents"]) == 8
