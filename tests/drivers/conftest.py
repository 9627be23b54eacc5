"""Real storage servers on 127.0.0.1, started once per session, emptied per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.emulators import Azurite, GcsEmulator, MotoS3


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoS3]:
    server = MotoS3.start()
    yield server
    server.stop()


@pytest.fixture
def s3(moto_s3: MotoS3) -> MotoS3:
    """An emptied moto server with bucket ``offload-test``, authentication off."""
    moto_s3.reset()
    moto_s3.create_bucket("offload-test")
    return moto_s3


@pytest.fixture(scope="session")
def gcs_emulator() -> Iterator[GcsEmulator]:
    server = GcsEmulator.start()
    yield server
    server.stop()


@pytest.fixture
def gcs(gcs_emulator: GcsEmulator) -> GcsEmulator:
    """An emptied emulator with bucket ``offload-test``."""
    gcs_emulator.reset("offload-test")
    return gcs_emulator


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    server = Azurite.start()
    yield server
    server.stop()
