"""Starting the real components tests talk to (see DESIGN.md: real parts, not mocks)."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def _require(module: str, install: str) -> Any:
    try:
        return __import__(module, fromlist=["_"])
    except ImportError:
        pytest.fail(f"{module} is not installed: run `make test` (it installs {install}) or pip install {install}")


@dataclass
class MotoS3:
    """moto's S3 server (``ThreadedMotoServer``) on 127.0.0.1."""

    server: Any
    endpoint: str

    @classmethod
    def start(cls) -> MotoS3:
        moto_server = _require("moto.server", "'moto[server]'")
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        return cls(server, f"http://{host}:{port}")

    def _post(self, path: str, body: bytes = b"") -> None:
        request = urllib.request.Request(
            self.endpoint + path, data=body, method="POST", headers={"Content-Type": "text/plain"}
        )
        urllib.request.urlopen(request, timeout=30).read()

    def reset(self) -> None:
        self._post("/moto-api/reset")
        self.require_auth(False)

    def require_auth(self, on: bool) -> None:
        """Make moto check credentials (it accepts anything by default)."""
        self._post("/moto-api/reset-auth", b"0" if on else b"inf")

    def client_options(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "region": "us-east-1", "access_key_id": "testing",
                "secret_access_key": "testing"}  # fmt: skip

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def client(self) -> Any:
        """A plain boto3 client, to look at the server behind the driver's back."""
        boto3 = _require("boto3", "boto3")
        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip

    def stop(self) -> None:
        self.server.stop()


@dataclass
class GcsEmulator:
    """gcp-storage-emulator, in memory, on 127.0.0.1."""

    server: Any
    endpoint: str

    @classmethod
    def start(cls) -> GcsEmulator:
        emulator = _require("gcp_storage_emulator.server", "gcp-storage-emulator")
        logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
        server = emulator.create_server("127.0.0.1", 0, in_memory=True)
        server.start()
        host, port = server._api._httpd.server_address
        return cls(server, f"http://{host}:{port}")

    def reset(self, bucket: str) -> None:
        self.server.wipe()
        request = urllib.request.Request(
            f"{self.endpoint}/storage/v1/b?project=offload-core",
            data=json.dumps({"name": bucket}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        urllib.request.urlopen(request, timeout=30).read()

    def client_options(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "token": "anon"}

    def stop(self) -> None:
        self.server.stop()


AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's documented, public development key (not a secret).
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
AZURITE_BIN = Path(__file__).resolve().parent.parent / ".tools" / "azurite" / "node_modules" / ".bin" / "azurite-blob"


@dataclass
class Azurite:
    """Azurite's blob service (npm package ``azurite``), in memory, on a free port."""

    process: subprocess.Popen[bytes]
    endpoint: str

    @classmethod
    def start(cls, *, skip_api_version_check: bool = True) -> Azurite:
        """Azurite on a free port; ``skip_api_version_check=False`` starts it
        as its README's plain command does, refusing SDKs newer than it."""
        if not AZURITE_BIN.exists():
            pytest.fail(
                f"Azurite is not installed at {AZURITE_BIN}: run `make test` (it runs "
                "`npm install --prefix .tools/azurite azurite`)"
            )
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        process = subprocess.Popen(
            [str(AZURITE_BIN), "--inMemoryPersistence", *(["--skipApiVersionCheck"] if skip_api_version_check else []),
             "--silent", "--blobHost", "127.0.0.1", "--blobPort", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"Azurite exited: {process.stderr.read().decode() if process.stderr else ''}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    return cls(process, f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}")
            time.sleep(0.1)
        process.kill()
        pytest.fail("Azurite did not start listening within 60 s")

    def connection_string(self) -> str:
        return (f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
                f"BlobEndpoint={self.endpoint};")  # fmt: skip

    def new_container(self) -> str:
        """A fresh, empty container for one test."""
        service = _require("azure.storage.blob", "azure-storage-blob").BlobServiceClient
        name = f"offload-{uuid.uuid4().hex[:12]}"
        service.from_connection_string(self.connection_string()).create_container(name)
        return name

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
