"""``offload drivers ...``: check a storage driver against a real store."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import click

from ..errors import AlreadyExistsError, NotFoundError, mask_secret_text
from ..plugins import open_driver
from ..storage import StorageDriver
from ..urls import redact_url
from .options import driver_options, parse_driver_options

# ASCII only: some servers (gcp-storage-emulator among them) cannot echo
# other metadata; non-ASCII metadata is the contract kit's to test.
_PROBE_METADATA = {"offload-probe": "1", "note": "safe to delete"}


@click.group()
def drivers() -> None:
    """Storage drivers."""


@drivers.command()
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per step, then a summary, one per line.")
@click.option("--create", is_flag=True, help="First create the bucket (S3, GCS) or container (Azure) if it is missing.")
@driver_options
def check(url: str, as_json: bool, create: bool, options: tuple[str, ...]) -> None:
    """Write, read, list and delete a probe object at URL, and report each step.

    URL is a store URL (file:///data/bucket, s3://bucket/prefix) or a driver
    name with -o options. Stops at the first failing step (removing the
    probe object) and exits 1. A store that accepts a conditional create
    over an existing object is reported as a warning: offload-core does not
    rely on it, but it is worth knowing. With --create, the bucket or
    container is created first if it is missing (a directory store's root
    is made when it is opened).
    """
    driver = open_driver(url, **parse_driver_options(options))
    key = f"offload-probe/{uuid.uuid4().hex}"
    shown = redact_url(url)
    probe = (shown if shown.endswith("/") else shown + "/") + key if "://" in url else f"{driver!r} key {key}"
    payload = [b"offload-core probe\n", bytes(range(256)) * 64]
    expected = b"".join(payload)
    warnings: list[str] = []

    def report(record: dict[str, Any], line: str) -> None:
        click.echo(json.dumps(record) if as_json else line)

    if not as_json:
        click.echo(f"checking {redact_url(url)} with probe object {probe}")

    def step(name: str, action: Callable[[], str]) -> None:
        started = time.perf_counter()
        try:
            detail = action()
        except Exception as exc:  # noqa: BLE001 - a one-line report, never a third party's traceback
            text = str(exc) if isinstance(exc, AssertionError) else f"{type(exc).__name__}: {exc}"
            error = (mask_secret_text(text).splitlines() or [type(exc).__name__])[0]
            report({"step": name, "ok": False, "error": error}, f"  FAIL {name}: {error}")
            if name not in ("create bucket", "write"):
                _remove_quietly(driver, key)
            driver.close()
            report({"ok": False, "probe": probe}, "check failed")
            raise SystemExit(1) from None
        elapsed = round(1000 * (time.perf_counter() - started), 1)
        report({"step": name, "ok": True, "ms": elapsed, "detail": detail},
               f"  ok   {name:<22} {elapsed:7.1f} ms  {detail}")  # fmt: skip

    def write() -> str:
        info = driver.write(key, iter(payload), metadata=_PROBE_METADATA)
        _expect(info.size == len(expected), f"write reported {info.size} bytes, sent {len(expected)}")
        return f"{info.size} bytes in {len(payload)} parts"

    def stat() -> str:
        info = driver.stat(key)
        _expect(info.size == len(expected), f"stat says {info.size} bytes, wrote {len(expected)}")
        _expect(dict(info.metadata) == _PROBE_METADATA, f"metadata came back as {dict(info.metadata)}")
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
        warnings.append("conditional create replaced an existing object (this server does not enforce it)")
        return "WARNING: " + warnings[-1]

    def delete() -> str:
        driver.delete([key])
        try:
            driver.stat(key)
        except NotFoundError:
            return "gone"
        raise AssertionError("the probe object is still there after delete")

    def create_bucket() -> str:
        return "created" if driver.create_bucket() else "already there"

    for name, action in [
        *([("create bucket", create_bucket)] if create else []),
        ("write", write),
        ("stat", stat),
        ("read", read),
        ("list", listing),
        ("conditional create", conditional),
        ("delete", delete),
    ]:
        step(name, action)
    driver.close()
    report({"ok": True, "probe": probe, "warnings": warnings},
           "all checks passed" + (f" ({len(warnings)} warning)" if warnings else ""))  # fmt: skip


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _remove_quietly(driver: StorageDriver, key: str) -> None:
    """Remove the probe after a failed step; the step's error was reported
    already, and the store most likely fails this the same way."""
    try:
        driver.delete([key])
    except Exception:  # noqa: BLE001, S110 - best effort, see the docstring
        return
