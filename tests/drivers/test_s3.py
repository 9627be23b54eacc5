"""The S3 driver against moto's S3 server, over real HTTP."""

from __future__ import annotations

import random
import socket
import uuid

import pytest
from offload_driver_s3 import S3Driver

from offload_core import (
    AccessDeniedError,
    BlobStoreLedgerOffloader,
    ConfigError,
    InMemoryReadHandle,
    NotFoundError,
    OffloadError,
    StorageDriver,
    TransientStorageError,
    open_driver,
    open_offloader,
)
from offload_core.testing import DriverContract
from offload_core.testing.faults import Fault, FaultyDriver
from tests.emulators import MotoS3

pytestmark = pytest.mark.emulator
MiB = 2**20


def driver_for(s3: MotoS3, **options: object) -> S3Driver:
    return S3Driver("offload-test", **{**s3.client_options(), "retry_attempts": 2, **options})  # type: ignore[arg-type]


class TestS3Contract(DriverContract):
    state_machine_examples = 10

    @pytest.fixture
    def driver(self, s3: MotoS3) -> StorageDriver:
        return driver_for(s3, prefix="contract/run")


def test_open_by_url_and_by_pulsar_name(s3: MotoS3) -> None:
    options = s3.client_options()
    by_url = open_driver("s3://offload-test/some/prefix", **options)
    assert isinstance(by_url, S3Driver) and by_url.prefix == "some/prefix/"
    by_name = open_driver("aws-s3", bucket="offload-test", **options)
    by_name.write("k", b"v")
    assert open_driver("S3", bucket="offload-test", **options).read("k") == b"v"
    assert s3.client().get_object(Bucket="offload-test", Key="k")["Body"].read() == b"v"


def test_one_part_per_block(s3: MotoS3) -> None:
    driver = driver_for(s3)
    blocks = [bytes([n]) * (5 * MiB + n) for n in range(3)] + [b"tail"]
    driver.write("obj", iter(blocks))
    head = s3.client().head_object(Bucket="offload-test", Key="obj", PartNumber=1)
    assert head["PartsCount"] == 4
    assert driver.read("obj", 5 * MiB - 1, 5 * MiB + 1) == b"\x00\x01"


def test_small_parts_are_coalesced(s3: MotoS3) -> None:
    driver = driver_for(s3)
    driver.write("obj", iter([b"x" * MiB] * 12))
    head = s3.client().head_object(Bucket="offload-test", Key="obj", PartNumber=1)
    assert head["PartsCount"] == 3  # 5 + 5 + 2 MiB: S3 refuses parts under 5 MiB but the last
    assert driver.stat("obj").size == 12 * MiB


@pytest.mark.parametrize("fault", [{"op": "part", "nth": 2}, {"op": "part", "nth": 3, "permanent": True},
                                   {"op": "complete"}])  # fmt: skip
def test_killed_upload_leaves_no_object_and_no_multipart_upload(s3: MotoS3, fault: dict[str, object]) -> None:
    faulty = FaultyDriver(driver_for(s3), [Fault(**fault)])  # type: ignore[arg-type]
    with pytest.raises(OffloadError, match="injected"):
        faulty.write("obj", iter([b"a" * (5 * MiB)] * 3))
    client = s3.client()
    assert client.list_objects_v2(Bucket="offload-test").get("Contents", []) == []
    assert client.list_multipart_uploads(Bucket="offload-test").get("Uploads", []) == []


def test_refused_conditional_complete_aborts_its_upload(s3: MotoS3) -> None:
    driver = driver_for(s3)
    driver.write("obj", b"first")
    with pytest.raises(OffloadError, match="already exists"):
        driver.write("obj", iter([b"x" * (5 * MiB), b"y"]), if_absent=True)
    assert driver.read("obj") == b"first"
    assert s3.client().list_multipart_uploads(Bucket="offload-test").get("Uploads", []) == []


def test_non_ascii_metadata_is_readable_by_other_s3_clients_too(s3: MotoS3) -> None:
    driver = driver_for(s3)
    driver.write("obj", b"x", metadata={"title": "héllo ✓", "plain": "ascii"})
    raw = s3.client().head_object(Bucket="offload-test", Key="obj")["Metadata"]
    assert raw["plain"] == "ascii" and raw["title"].startswith("=?UTF-8?B?")
    assert driver.stat("obj").metadata == {"title": "héllo ✓", "plain": "ascii"}


def test_pip17_round_trip(s3: MotoS3) -> None:
    rng = random.Random(17)
    entries = [rng.randbytes(rng.randrange(1, 40_000)) for _ in range(700)]
    offloader = open_offloader("s3://offload-test/ledgers", **s3.client_options(), max_block_size=5 * MiB)
    uid = uuid.uuid4()
    result = offloader.offload(InMemoryReadHandle(2**33 + 1, entries), uid)
    assert result.blocks >= 3
    head = s3.client().head_object(Bucket="offload-test", Key=f"ledgers/{result.data_key}", PartNumber=1)
    assert head["PartsCount"] == result.blocks
    handle = offloader.read_offloaded(2**33 + 1, uid, result.driver_metadata)
    assert [e.data for e in handle.read(0, 699)] == entries
    for entry_id in rng.sample(range(700), 50):
        assert handle.read(entry_id, entry_id)[0].data == entries[entry_id]
    offloader.delete_offloaded(2**33 + 1, uid)
    offloader.delete_offloaded(2**33 + 1, uid)
    assert s3.client().list_objects_v2(Bucket="offload-test").get("Contents", []) == []


def test_block_size_below_the_s3_minimum_is_a_config_error(s3: MotoS3) -> None:
    with pytest.raises(ConfigError, match="minimum multipart part size of 5242880 bytes"):
        BlobStoreLedgerOffloader(driver_for(s3), max_block_size=MiB)


def test_bad_credentials_name_the_bucket_and_the_setting_not_the_secret(s3: MotoS3) -> None:
    driver = driver_for(s3, access_key_id="AKIAWRONG", secret_access_key="s3cr3t-value")
    s3.require_auth(True)
    try:
        for call in (lambda: driver.read("k"), lambda: driver.stat("k"), lambda: list(driver.list("")),
                     lambda: driver.write("k", b"v")):  # fmt: skip
            with pytest.raises(AccessDeniedError) as caught:
                call()
            message = str(caught.value)
            assert "offload-test" in message and "secret_access_key" in message
            assert "s3cr3t-value" not in message
            assert isinstance(caught.value, PermissionError)
    finally:
        s3.require_auth(False)


def test_missing_bucket_and_missing_key(s3: MotoS3) -> None:
    driver = S3Driver("no-such-bucket", **{**s3.client_options(), "retry_attempts": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="'no-such-bucket' does not exist.*managedLedgerOffloadBucket"):
        driver.read("k")
    with pytest.raises(NotFoundError, match="s3://offload-test/missing"):
        driver_for(s3).stat("missing")


def test_invalid_bucket_name_and_half_credentials() -> None:
    with pytest.raises(ConfigError, match="bucket name 'Bad_Bucket' is invalid"):
        S3Driver("Bad_Bucket")
    with pytest.raises(ConfigError, match="both access_key_id and secret_access_key"):
        S3Driver("fine-bucket", access_key_id="only-this")


def test_unreachable_endpoint_is_transient_and_retried_a_bounded_number_of_times() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once we leave: connections are refused
    driver = S3Driver("offload-test", endpoint=f"http://127.0.0.1:{port}", access_key_id="a",
                      secret_access_key="b", region="us-east-1", retry_attempts=3, connect_timeout=1)  # fmt: skip
    with pytest.raises(TransientStorageError) as caught:
        driver.stat("k")
    assert "gave up after 3 attempts" in caught.value.__notes__[0]


def test_no_credentials_anywhere_is_a_clear_config_error(s3: MotoS3) -> None:
    driver = S3Driver("offload-test", endpoint=s3.endpoint, region="us-east-1", retry_attempts=1)
    with pytest.raises(ConfigError, match="no AWS credentials found for s3://offload-test"):
        driver.stat("k")
