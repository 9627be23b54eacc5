"""The Azure Blob driver against Azurite, over real HTTP."""

from __future__ import annotations

import random
import uuid

import pytest
from azure.storage.blob import BlobServiceClient
from offload_driver_azure import AzureBlobDriver
from offload_driver_azure.names import decode_name, encode_name

from offload_core import (
    AccessDeniedError,
    ConfigError,
    InMemoryReadHandle,
    NotFoundError,
    OffloadError,
    StorageDriver,
    open_driver,
    open_offloader,
)
from offload_core.testing import DriverContract
from offload_core.testing.faults import Fault, FaultyDriver
from tests.emulators import AZURITE_ACCOUNT, AZURITE_KEY, Azurite

pytestmark = pytest.mark.emulator


@pytest.fixture
def container(azurite: Azurite) -> str:
    return azurite.new_container()


def driver_for(azurite: Azurite, container: str, **options: object) -> AzureBlobDriver:
    return AzureBlobDriver(container, connection_string=azurite.connection_string(), retry_attempts=2,
                           **options)  # type: ignore[arg-type]  # fmt: skip


class TestAzureContract(DriverContract):
    state_machine_examples = 10
    large_part_size = 2**20

    @pytest.fixture
    def driver(self, azurite: Azurite, container: str) -> StorageDriver:
        return driver_for(azurite, container, prefix="contract/run")


def test_open_by_url_name_and_account_key(azurite: Azurite, container: str) -> None:
    by_url = open_driver(f"az://{container}/some/prefix", connection_string=azurite.connection_string())
    assert isinstance(by_url, AzureBlobDriver) and by_url.prefix == "some/prefix/"
    by_key = open_driver("azureblob", container=container, account_name=AZURITE_ACCOUNT, account_key=AZURITE_KEY,
                         endpoint=azurite.endpoint)  # fmt: skip
    by_key.write(
        "k", b"v", metadata={"managed-ledger": "t/n/persistent/x", "s3managedledgeroffloaderformatversion": "1"}
    )
    raw = BlobServiceClient.from_connection_string(azurite.connection_string()).get_blob_client(container, "k")
    stored = raw.get_blob_properties().metadata
    assert stored["s3managedledgeroffloaderformatversion"] == "1"  # as Pulsar stores it
    assert decode_name(next(name for name in stored if name.startswith("ocx_"))) == "managed-ledger"
    assert open_driver("azure", bucket=container, connection_string=azurite.connection_string()).stat("k").metadata == {
        "managed-ledger": "t/n/persistent/x",
        "s3managedledgeroffloaderformatversion": "1",
    }


def test_one_block_per_part(azurite: Azurite, container: str) -> None:
    driver = driver_for(azurite, container)
    driver.write("obj", iter([b"a" * 1000, b"", b"b" * 10, b"c"]))
    blob = BlobServiceClient.from_connection_string(azurite.connection_string()).get_blob_client(container, "obj")
    committed, _ = blob.get_block_list("committed")
    assert [block.size for block in committed] == [1000, 10, 1]


@pytest.mark.parametrize("fault", [{"op": "part", "nth": 2}, {"op": "complete", "permanent": True}])
def test_killed_upload_leaves_no_object(azurite: Azurite, container: str, fault: dict[str, object]) -> None:
    faulty = FaultyDriver(driver_for(azurite, container), [Fault(**fault)])  # type: ignore[arg-type]
    with pytest.raises(OffloadError, match="injected"):
        faulty.write("obj", iter([b"a" * 1000] * 3))
    assert list(driver_for(azurite, container).list("")) == []


def test_pip17_round_trip(azurite: Azurite, container: str) -> None:
    rng = random.Random(31)
    entries = [rng.randbytes(rng.randrange(1, 6000)) for _ in range(400)]
    offloader = open_offloader(f"az://{container}/ledgers", connection_string=azurite.connection_string(),
                               max_block_size=64 * 1024)  # fmt: skip
    uid = uuid.uuid4()
    result = offloader.offload(InMemoryReadHandle(2**36, entries), uid)
    assert result.blocks >= 3
    handle = offloader.read_offloaded(2**36, uid, result.driver_metadata)
    assert [e.data for e in handle.read(0, 399)] == entries
    for entry_id in rng.sample(range(400), 40):
        assert handle.read(entry_id, entry_id)[0].data == entries[entry_id]
    offloader.delete_offloaded(2**36, uid)
    offloader.delete_offloaded(2**36, uid)
    assert list(driver_for(azurite, container).list("")) == []


def test_bad_key_is_access_denied_without_the_secret(azurite: Azurite, container: str) -> None:
    wrong = "c2VjcmV0LWJ1dC13cm9uZy1rZXk="
    driver = AzureBlobDriver(container, account_name=AZURITE_ACCOUNT, account_key=wrong, endpoint=azurite.endpoint,
                             retry_attempts=1)  # fmt: skip
    for call in (lambda: driver.stat("k"), lambda: driver.write("k", b"v")):
        with pytest.raises(AccessDeniedError) as caught:
            call()
        assert container in str(caught.value) and "account_key" in str(caught.value)
        assert wrong not in str(caught.value)


def test_missing_container_and_key(azurite: Azurite) -> None:
    with pytest.raises(ConfigError, match="container 'no-such-container' does not exist"):
        driver_for(azurite, "no-such-container").write("k", b"v")
    with pytest.raises(NotFoundError, match="missing"):
        driver_for(azurite, azurite.new_container()).stat("missing")


def test_bad_configuration() -> None:
    with pytest.raises(ConfigError, match="container name"):
        AzureBlobDriver("Bad_Name", connection_string="x")
    with pytest.raises(ConfigError, match="needs connection_string"):
        AzureBlobDriver("fine-container", account_name="acct")


@pytest.mark.parametrize("name", ["s3managedledgeroffloaderformatversion", "managed-ledger", "x.y-z", "1abc", "ocx_a",
                                  "a_b", "_lead"])  # fmt: skip
def test_metadata_names_round_trip_as_identifiers(name: str) -> None:
    stored = encode_name(name)
    assert stored.isidentifier() and decode_name(stored) == name


def test_credentials_from_the_environment_as_pulsar_reads_them(
    azurite: Azurite, container: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT", AZURITE_ACCOUNT)
    monkeypatch.setenv("AZURE_STORAGE_ACCESS_KEY", AZURITE_KEY)
    driver = open_driver("azureblob", bucket=container, endpoint=azurite.endpoint)
    driver.write("k", b"v")
    assert driver.read("k") == b"v"
