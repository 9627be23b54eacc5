"""Real storage servers on 127.0.0.1, started once per session, emptied per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.emulators import Azurite, GcsEmulator


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
