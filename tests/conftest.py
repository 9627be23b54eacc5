"""Fixtures shared by the driver, broker and Spark tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.emulators import MotoS3


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
