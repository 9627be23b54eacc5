"""``offload drivers ...``: check a storage driver against a real store."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import click

from ..errors import AlreadyExistsError, NotFoundError, OffloadError
from ..plugins import open_driver
from ..storage import StorageDriver
from .options import driver_options, parse_driver_options


@click.group()
def drivers() -> None:
    """Storage drivers."""


@drivers.command()
@click.argument("url")
@driver_options
def check(url: str, options: tuple[str, ...]) -> None:
    """Write, read, list and delete a probe object at URL, and report each step.

    URL is a store URL (file:///data/bucket, s3://bucket/prefix) or a driver
    name with -o options. Exits non-zero at the first failing step.
    """
    driver = open_driver(url, **parse_driver_options(options))
    key = f"offload-probe/{uuid.uuid4().hex}"
    payload = [b"offload-core probe\n", bytes(range(256)) * 64]
    expected = b"".join(payload)
    metadata = {"offload-probe": "1", "note": "safe to delete ✓"}
    click.echo(f"checking {url} with probe object {key!r}")

    def step(name: str, action: Callable[[], str]) -> None:
        started = time.perf_counter()
        try:
            detail = action()
        except (OffloadError, AssertionError) as exc:
            click.echo(f"  FAIL {name}: {exc}")
            _cleanup(driver, key)
            raise SystemExit(1) from exc
        click.echo(f"  ok   {name:<22} {1000 * (time.perf_counter() - started):7.1f} ms  {detail}")

    def write() -> str:
        info = driver.write(key, iter(payload), metadata=metadata)
        _expect(info.size == len(expected), f"write reported {info.size} bytes, sent {len(expected)}")
        return f"{info.size} bytes in {len(payload)} parts"

    def stat() -> str:
        info = driver.stat(key)
        _expect(info.size == len(expected), f"stat says {info.size} bytes, wrote {len(expected)}")
        _expect(dict(info.metadata) == metadata, f"metadata came back as {dict(info.metadata)}")
        return "size and metadata match"

    def read() -> str:
        _expect(driver.read(key) == expected, "whole-object read differs from what was written")
        _expect(driver.read(key, 19, 21) == b"\x00\x01", "ranged read returned the wrong bytes")
        return "whole and ranged reads match"

    def listing() -> str:
        keys = [info.key for info in driver.list("offload-probe/")]
        _expect(key in keys, "the probe object is not listed")
        return f"{len(keys)} object(s) under offload-probe/"

    def conditional() -> str:
        try:
            driver.write(key, b"x", if_absent=True)
        except AlreadyExistsError:
            return "existing key refused"
        raise AssertionError("conditional create replaced an existing object")

    def delete() -> str:
        driver.delete([key])
        try:
            driver.stat(key)
        except NotFoundError:
            return "gone"
        raise AssertionError("the probe object is still there after delete")

    for name, action in [
        ("write", write),
        ("stat", stat),
        ("read", read),
        ("list", listing),
        ("conditional create", conditional),
        ("delete", delete),
    ]:
        step(name, action)
    click.echo("all checks passed")


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _cleanup(driver: StorageDriver, key: str) -> None:
    try:
        driver.delete([key])
    except OffloadError as exc:
        click.echo(f"  could not delete the probe object {key!r}: {exc}", err=True)
