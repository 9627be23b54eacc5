"""What goes wrong only on a real cluster ends the job with one error on
the Spark driver naming what to fix: a worker whose Python cannot import
offload-core, an executor with no credentials for the store, or with a
wrong secret; and what failOnDataLoss=false skips in an executor is
counted on the driver."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest

from offload_core import InMemoryReadHandle, open_offloader
from offload_core.errors import AccessDeniedError, ConfigError
from offload_core.managed_ledger import Broker, parse_config
from offload_core.spark import WorkerEnvironmentError, backfill, skipped_objects, verify_store
from tests.emulators import MotoS3
from tests.spark.test_data_loss import stream_losing_a_segment

pytestmark = pytest.mark.spark

BARE = Path(sys.base_prefix) / "bin" / "python3"


def test_a_worker_that_cannot_import_offload_core_fails_the_jobs_naming_its_interpreter(
    cluster_spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probe = subprocess.run([str(BARE), "-c", "import offload_core.spark"], capture_output=True)
    assert probe.returncode != 0, f"{BARE} can import offload-core; this test needs an interpreter that cannot"
    url = f"file://{tmp_path / 'store'}"
    open_offloader(url, max_block_size=1024).offload(InMemoryReadHandle(1, [b"entry"] * 20), uuid.uuid4())
    config = parse_config({"managedLedgerMaxEntriesPerLedger": 10})
    with Broker(tmp_path / "data", config) as broker:
        for n in range(20):
            broker.topic("public/default/orders").append(b"order %d" % n)
    # The executors' interpreter, as a worker host whose python lacks offload-core would have it.
    monkeypatch.setattr(cluster_spark.sparkContext, "pythonExec", str(BARE))
    for job in (
        lambda: verify_store(cluster_spark, url),
        lambda: backfill(cluster_spark, tmp_path / "data", config=config),
    ):
        with pytest.raises(WorkerEnvironmentError) as caught:
            job()
        message = str(caught.value)
        assert message.startswith(f"this Spark worker runs {BARE}") and "cannot import offload-core" in message
        assert "PYSPARK_PYTHON" in message and "spark.pyspark.python" in message


@pytest.mark.emulator
def test_an_executor_without_credentials_fails_the_job_once_naming_the_store_and_the_fix(
    cluster_spark: Any, s3: MotoS3, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = s3.client_options()
    url = "s3://offload-test/ledgers"
    for ledger_id in (1, 2):
        open_offloader(url, **options, max_block_size=5 * 2**20).offload(
            InMemoryReadHandle(ledger_id, [b"entry"] * 10), uuid.uuid4()
        )
    # The Spark driver has credentials of its own, which local[*] would lend its tasks; executors have none.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", options["access_key_id"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", options["secret_access_key"])
    without = {"endpoint": options["endpoint"], "region": options["region"]}
    with pytest.raises(ConfigError) as caught:
        verify_store(cluster_spark, url, driver_options=without)
    message = str(caught.value)
    assert message.startswith("a Spark task on ") and "cannot use the store s3://offload-test/ledgers" in message
    assert "no AWS credentials found" in message and "pass credentials as driver options" in message


@pytest.mark.emulator
def test_a_wrong_secret_fails_the_backfill_once_naming_the_store_and_the_setting_never_the_secret(
    cluster_spark: Any, s3: MotoS3, tmp_path: Path
) -> None:
    # An IAM user of moto's: a key id the store knows, with a secret that is not its own.
    users = boto3.client("iam", endpoint_url=s3.endpoint, region_name="us-east-1",
                         aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    users.create_user(UserName="backfill")
    key = users.create_access_key(UserName="backfill")["AccessKey"]
    wrong = {"access_key_id": key["AccessKeyId"], "secret_access_key": "wrong-" + key["SecretAccessKey"][6:]}
    config = parse_config({
        "managedLedgerMaxEntriesPerLedger": 10, "managedLedgerOffloadDriver": "aws-s3",
        "managedLedgerOffloadBucket": "offload-test", "managedLedgerOffloadServiceEndpoint": s3.endpoint,
        "managedLedgerOffloadRegion": "us-east-1", "managedLedgerOffloadMaxBlockSizeInBytes": 5 * 2**20,
    })  # fmt: skip
    with Broker(tmp_path / "data", config) as broker:
        for n in range(30):  # 3 ledgers, sealed when the broker closes
            broker.topic("public/default/orders").append(b"order %d" % n)
    s3.require_auth(True)
    try:
        with pytest.raises(AccessDeniedError) as caught:
            backfill(cluster_spark, tmp_path / "data", config=config, driver_options=wrong)
        # verify and retention list the store on the Spark driver first: the same refusal, raised there.
        with pytest.raises(AccessDeniedError) as listed:
            verify_store(cluster_spark, "s3://offload-test", driver_options={**wrong, "endpoint": s3.endpoint})
    finally:
        s3.require_auth(False)
    message = str(caught.value)
    assert message.startswith("a Spark task on ")
    assert f"cannot use the store aws-s3 bucket offload-test at {s3.endpoint}" in message
    assert "SignatureDoesNotMatch" in message and "secret_access_key" in message and "correct them there" in message
    assert "offload-test" in str(listed.value) and "secret_access_key" in str(listed.value)
    assert all(wrong["secret_access_key"] not in str(error.value) for error in (caught, listed))
    # What the failed run prepared does not stand in the way: with the right secret, every ledger goes.
    right = {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"]}
    result = backfill(cluster_spark, tmp_path / "data", config=config, driver_options=right)
    assert len(result.offloaded) == 3 and not result.failed, result.ledgers


def test_a_stream_on_the_cluster_counts_a_segment_gone_after_planning(cluster_spark: Any, tmp_path: Path) -> None:
    url, lost, offsets = stream_losing_a_segment(cluster_spark, tmp_path)  # its tasks run on the executors
    assert sorted(offsets) == list(range(100, 200))
    (row,) = (
        skipped_objects(cluster_spark).where(f"store = '{url}'").select("key", "first_offset", "last_offset").collect()
    )
    assert (row.key, row.first_offset, row.last_offset) == (lost, 0, 99)
